"""Lab `modules` test submission (see the .toml beside this file)."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn


def load_state_(module: nn.Module, state_dict: Mapping[str, torch.Tensor]) -> nn.Module:
    own = module.state_dict(keep_vars=True)
    missing = [key for key in own if key not in state_dict]
    unexpected = [key for key in state_dict if key not in own]
    mismatched = [key for key in own if key in state_dict
                  and tuple(state_dict[key].shape) != tuple(own[key].shape)]
    if missing or unexpected or mismatched:
        raise RuntimeError(f"missing: {missing}, unexpected: {unexpected}, "
                           f"mismatched: {mismatched}")
    with torch.no_grad():
        for key, target in own.items():
            target.copy_(state_dict[key])
    return module


def tie_weights_(decoder: nn.Linear, embedding: nn.Embedding) -> nn.Linear:
    decoder.weight = embedding.weight
    return decoder


def ema_update_model_(ema: nn.Module, model: nn.Module, decay: float) -> nn.Module:
    """The mix computed out of place, then copied in: right values, two temporaries per
    parameter as large as it."""
    sources = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    with torch.no_grad():
        for name, target in ema.named_parameters():
            target.copy_(decay * target + (1 - decay) * sources[name])
        for name, target in ema.named_buffers():
            target.copy_(buffers[name])
    return ema


def batchnorm_update_(running_mean: torch.Tensor, running_var: torch.Tensor,
                      num_batches_tracked: torch.Tensor, batch: torch.Tensor,
                      momentum: float | None = 0.1) -> None:
    dims = [d for d in range(batch.dim()) if d != 1]
    with torch.no_grad():
        var, mean = torch.var_mean(batch, dim=dims, correction=1)
        num_batches_tracked.add_(1)
        factor = 1.0 / float(num_batches_tracked) if momentum is None else momentum
        running_mean.lerp_(mean, factor)
        running_var.lerp_(var, factor)
