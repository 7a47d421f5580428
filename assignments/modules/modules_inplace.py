"""Lab `modules`: references and in-place updates at the level of a model.

`optimizer.step()` changes a model without any assignment because the optimizer holds the very
Parameter objects the model holds. The same rule holds one level up, on `nn.Module`s, and the
mistakes there are silent:

* Loading a checkpoint with `model.weight = nn.Parameter(v)` gives the model a new object: an
  optimizer built before keeps training the old one, which the model no longer uses.
* Tying two layers with `decoder.weight.data = embedding.weight.data` gives two Parameters over
  one storage: `parameters()` lists both, and every step updates the memory twice.
* An EMA model rebuilt with `copy.deepcopy` each step allocates a whole model per step.
* BatchNorm's running statistics use the *unbiased* variance, and belong in the buffers
  themselves, updated in place.

Rules of the game (the grader checks every one):

* Every parameter and buffer keeps its object and its storage; its version counter advances so
  autograd can see the write. Update under `torch.no_grad()`; never through `.data`.
* No temporary as large as a parameter, and no autograd history in what you write.

Run `inplace-grader check modules_inplace.py` to see which property holds and which does not.
"""

from __future__ import annotations

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
    # YOUR CODE HERE
    raise NotImplementedError


def tie_weights_(decoder: nn.Linear, embedding: nn.Embedding) -> nn.Linear:
    """Make `decoder.weight` the very Parameter of `embedding.weight`; return `decoder`.

    One optimizer step then updates both layers once, and `parameters()` of a model holding
    both lists the weight once. The decoder's bias stays its own.
    """
    # YOUR CODE HERE
    raise NotImplementedError


def ema_update_model_(ema: nn.Module, model: nn.Module, decay: float) -> nn.Module:
    """Move `ema` towards `model` in place; return `ema`.

    Each floating-point parameter becomes `decay * ema + (1 - decay) * p`; each buffer is
    copied (integer buffers such as `num_batches_tracked` are copied, never averaged). `model`
    is left untouched; nothing as large as a parameter is allocated, and no autograd history
    is recorded.
    """
    # YOUR CODE HERE
    raise NotImplementedError


def batchnorm_update_(running_mean: torch.Tensor, running_var: torch.Tensor,
                      num_batches_tracked: torch.Tensor, batch: torch.Tensor,
                      momentum: float | None = 0.1) -> None:
    """Update BatchNorm's running statistics in place from `batch`, as `nn.BatchNorm1d` does
    in training mode.

    `batch` is (N, C) or (N, C, L); the statistics are per channel C. `running_var` takes the
    *unbiased* variance of the batch; `num_batches_tracked` counts the batch. With
    `momentum=None` the statistics are the cumulative average over all batches so far
    (factor `1 / num_batches_tracked`), else `momentum` is the factor. Returns None.
    """
    # YOUR CODE HERE
    raise NotImplementedError
