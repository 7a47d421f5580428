"""The values each function must produce, computed in the grading process: in float64 from the
case's own draws, and for BatchNorm by torch's `nn.BatchNorm1d` itself on the same batches."""

from __future__ import annotations

import torch
from torch import nn

from grader.labs.modules.inputs import (
    INTEGER_KEYS,
    MLP_KEYS,
    MLP_PARAMETERS,
    Case,
    build_batch,
    build_state,
    build_statistics,
    mlp_values,
)


def loaded(case: Case) -> list[torch.Tensor]:
    """What each mlp entry holds after load_state_, in float64 (integers as they are)."""
    state = build_state({**case, "problem": None}, "cpu")
    return [state[key] if key in INTEGER_KEYS else state[key].to(torch.float64)
            for key in MLP_KEYS]


def averaged(case: Case) -> list[torch.Tensor]:
    """What each entry of the EMA model holds after ema_update_model_: parameters averaged in
    float64, buffers copied from the model."""
    ema = mlp_values(case["seed"], "float64", "cpu")
    model = mlp_values(case["seed"] + 500, "float64", "cpu")
    decay = case["decay"]
    return [decay * ema[key] + (1 - decay) * model[key] if key in MLP_PARAMETERS
            else model[key] for key in MLP_KEYS]


def batchnorm_statistics(case: Case) -> list[torch.Tensor]:
    """(running_mean, running_var, num_batches_tracked) after the case's batches, from
    `nn.BatchNorm1d` in training mode, in float64."""
    running_mean, running_var, tracked = build_statistics(case, "cpu")
    norm = nn.BatchNorm1d(case["shape"][1], momentum=case.get("momentum", 0.1),
                          dtype=torch.float64)
    buffers = dict(norm.named_buffers())  # tensors, where the attributes may be None
    with torch.no_grad():
        for name, start in zip(("running_mean", "running_var", "num_batches_tracked"),
                               (running_mean, running_var, tracked), strict=True):
            buffers[name].copy_(start)
        norm.train()
        for step in range(case["steps"]):
            norm(build_batch(case, step, "cpu").detach().to(torch.float64))
    return [buffers[name].clone() for name in ("running_mean", "running_var",
                                               "num_batches_tracked")]
