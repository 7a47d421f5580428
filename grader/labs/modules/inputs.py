"""Seeded modules and tensors for the modules lab, built identically in the child and in the
grading process (the grading process builds them on "cpu" for the references).

The model every case of load_state_ and ema_update_model_ uses is `mlp`: Linear(4, 5),
BatchNorm1d(5), Linear(5, 3), whose state dict holds parameters, float buffers and BatchNorm's
integer `num_batches_tracked`. Every value is drawn from the case's seed (module init's own
random draws are overwritten), so both processes hold the same numbers.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from grader.checks.dtypes import DTYPES

Case = dict[str, Any]

# The mlp's state dict, in order; which entries are parameters; its shapes.
MLP_SHAPES: dict[str, list[int]] = {
    "0.weight": [5, 4], "0.bias": [5], "1.weight": [5], "1.bias": [5],
    "1.running_mean": [5], "1.running_var": [5], "1.num_batches_tracked": [],
    "2.weight": [3, 5], "2.bias": [3],
}
MLP_KEYS = tuple(MLP_SHAPES)
MLP_PARAMETERS = ("0.weight", "0.bias", "1.weight", "1.bias", "2.weight", "2.bias")
INTEGER_KEYS = ("1.num_batches_tracked",)
# The learning rate of the optimizer a probe builds on a module before load_state_.
LR = 0.5
# The width of the model whose update is metered: its weight (WIDE x WIDE) is far over the
# allocation budget (a tenth of its bytes plus 4 KiB), the mlp's are under it.
WIDE = 96


def draw(shape: list[int], seed: int, dtype: str, device: str) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(shape, generator=generator, dtype=torch.float64)
    return values.to(DTYPES[dtype]).to(device)


def mlp_values(seed: int, dtype: str, device: str) -> dict[str, torch.Tensor]:
    """The values of an mlp state dict drawn from `seed`: positive running variances, and a
    count of batches of its own."""
    values: dict[str, torch.Tensor] = {}
    for index, (key, shape) in enumerate(MLP_SHAPES.items()):
        if key in INTEGER_KEYS:
            values[key] = torch.tensor(seed % 7 + 2, dtype=torch.long, device=device)
        else:
            values[key] = draw(shape, seed * 100 + index, dtype, device)
    values["1.running_var"] = values["1.running_var"].abs() + 0.5
    return values


def build_mlp(seed: int, dtype: str, device: str) -> nn.Sequential:
    model = nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5), nn.Linear(5, 3))
    model = model.to(device=device, dtype=DTYPES[dtype])
    own = model.state_dict(keep_vars=True)
    with torch.no_grad():
        for key, value in mlp_values(seed, dtype, device).items():
            own[key].copy_(value)
    return model


def build_wide(seed: int, width: int, dtype: str, device: str) -> nn.Linear:
    """Linear(width, width) with drawn values: the model an allocation case updates."""
    model = nn.Linear(width, width).to(device=device, dtype=DTYPES[dtype])
    with torch.no_grad():
        model.weight.copy_(draw([width, width], seed, dtype, device))
        model.bias.copy_(draw([width], seed + 1, dtype, device))
    return model


def build_state(case: Case, device: str) -> dict[str, torch.Tensor]:
    """The state dict load_state_ is given: an mlp's values from another seed, in
    `source_dtype` (on `source_device` where the case names one), with the case's `problem`
    (a key missing, one too many, a wrong shape)."""
    state = mlp_values(case["seed"] + 50, case["source_dtype"],
                       case.get("source_device", device))
    problem, key = case.get("problem"), case.get("key", "")
    if problem == "missing":
        del state[key]
    elif problem == "unexpected":
        state[key] = draw([2, 2], case["seed"] + 7, case["source_dtype"], device)
    elif problem == "shape":
        shape = [size + 1 for size in MLP_SHAPES[key]]
        state[key] = draw(shape, case["seed"] + 7, case["source_dtype"], device)
    return state


def build_tied_pair(case: Case, device: str) -> tuple[nn.Linear, nn.Embedding]:
    """(decoder, embedding): Linear(dim, vocab) and Embedding(vocab, dim), drawn values."""
    vocab, dim, dtype = case["vocab"], case["dim"], DTYPES[case["dtype"]]
    decoder = nn.Linear(dim, vocab).to(device=device, dtype=dtype)
    embedding = nn.Embedding(vocab, dim).to(device=device, dtype=dtype)
    with torch.no_grad():
        decoder.weight.copy_(draw([vocab, dim], case["seed"], case["dtype"], device))
        decoder.bias.copy_(draw([vocab], case["seed"] + 1, case["dtype"], device))
        embedding.weight.copy_(draw([vocab, dim], case["seed"] + 2, case["dtype"], device))
    return decoder, embedding


def build_statistics(case: Case, device: str
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(running_mean, running_var, num_batches_tracked) before the first batch."""
    channels = case["shape"][1]
    running_mean = draw([channels], case["seed"], case["dtype"], device)
    running_var = draw([channels], case["seed"] + 1, case["dtype"], device).abs() + 0.5
    tracked = torch.tensor(case["seed"] % 5, dtype=torch.long, device=device)
    return running_mean, running_var, tracked


def build_batch(case: Case, step: int, device: str) -> torch.Tensor:
    batch = draw(case["shape"], case["seed"] + 10 + step, case["dtype"], device) * 2 + 0.5
    return batch.requires_grad_() if case.get("requires_grad") else batch


def witnessed(function: str, case: Case) -> list[tuple[str, tuple[int, ...]]]:
    """No outside witness yet: the records alone are judged."""
    return []
