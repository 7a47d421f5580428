"""Lab `modules` test submission (see the .toml beside this file)."""

from __future__ import annotations

import copy
from collections.abc import Mapping

import torch
from torch import nn


def load_state_(module: nn.Module, state_dict: Mapping[str, torch.Tensor]) -> nn.Module:
    """Copy `state_dict` into `module` in place, as `module.load_state_dict(state_dict)` with
    `strict=True` does; return `module`.

    Every parameter and buffer keeps its object and storage, so an optimizer built on
    `module.parameters()` before the call keeps training the module after it. Values are
    copied as `Tensor.copy_` copies them (cast to the parameter's dtype, moved to its device).
    A missing key, an unexpected key or a shape that differs raises `RuntimeError` naming the
    keys, and then nothing is modified.
    """
    own = module.state_dict(keep_vars=True)  # the Parameter and buffer objects themselves
    missing = [key for key in own if key not in state_dict]
    unexpected = [key for key in state_dict if key not in own]
    mismatched = [key for key in own if key in state_dict
                  and tuple(state_dict[key].shape) != tuple(own[key].shape)]
    if missing or unexpected or mismatched:
        problems = []
        if missing:
            problems.append(f"missing keys: {', '.join(missing)}")
        if unexpected:
            problems.append(f"unexpected keys: {', '.join(unexpected)}")
        if mismatched:
            problems.append("shape mismatch for " + ", ".join(
                f"{key} ({tuple(state_dict[key].shape)} vs {tuple(own[key].shape)})"
                for key in mismatched))
        raise RuntimeError(f"Error loading state into {type(module).__name__}: "
                           + "; ".join(problems))
    with torch.no_grad():
        for key, target in own.items():
            target.copy_(state_dict[key])
    return module


def tie_weights_(decoder: nn.Linear, embedding: nn.Embedding) -> nn.Linear:
    """Make `decoder.weight` the very Parameter of `embedding.weight`; return `decoder`.

    One optimizer step then updates both layers once, and `parameters()` of a model holding
    both lists the weight once. The decoder's bias stays its own.
    """
    decoder.weight = embedding.weight  # nn.Module registers the same Parameter object
    return decoder


def ema_update_model_(ema: nn.Module, model: nn.Module, decay: float) -> nn.Module:
    """Move `ema` towards `model` in place; return `ema`.

    Each floating-point parameter becomes `decay * ema + (1 - decay) * p`; each buffer is
    copied (integer buffers such as `num_batches_tracked` are copied, never averaged). `model`
    is left untouched; nothing as large as a parameter is allocated, and no autograd history
    is recorded.
    """
    sources = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    with torch.no_grad():
        for name, target in ema.named_parameters():
            target.lerp_(sources[name], 1.0 - decay)
        for name, target in ema.named_buffers():
            target.copy_(buffers[name])
    return ema


def batchnorm_update_(running_mean: torch.Tensor, running_var: torch.Tensor,
                      num_batches_tracked: torch.Tensor, batch: torch.Tensor,
                      momentum: float | None = 0.01) -> None:
    """Update BatchNorm's running statistics in place from `batch`, as `nn.BatchNorm1d` does
    in training mode.

    `batch` is (N, C) or (N, C, L); the statistics are per channel C. `running_var` takes the
    *unbiased* variance of the batch; `num_batches_tracked` counts the batch. With
    `momentum=None` the statistics are the cumulative average over all batches so far
    (factor `1 / num_batches_tracked`), else `momentum` is the factor. Returns None.
    """
    dims = [d for d in range(batch.dim()) if d != 1]
    with torch.no_grad():
        var, mean = torch.var_mean(batch, dim=dims, correction=1)
        num_batches_tracked.add_(1)
        factor = 1.0 / float(num_batches_tracked) if momentum is None else momentum
        running_mean.lerp_(mean.to(running_mean.dtype), factor)
        running_var.lerp_(var.to(running_var.dtype), factor)
