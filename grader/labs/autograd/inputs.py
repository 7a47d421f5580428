"""Seeded cases for the autograd lab, built identically in the child and the grading process.

The tensor a case starts from is described by `kind`:
- `plain`: no autograd at all; `leaf`: a leaf that requires grad; `view_of_leaf`: a basic-slice
  view of such a leaf; `nonleaf`: `1.5 * leaf` (requires grad, not a leaf, in place allowed);
  `no_grad_leaf`: a leaf that requires grad, used under `torch.no_grad()`;
  `transposed`: a non-contiguous view of a plain tensor; `zero_dim`: a 0-dim leaf;
  `unbind_view`: one output of `unbind` (a multi-output view autograd will not let change);
  `no_grad_view`: a view of a leaf made under `torch.no_grad()`, then changed with grad on.
"""

from __future__ import annotations

from typing import Any

import torch

from grader.checks.dtypes import DTYPES

Case = dict[str, Any]

NONLEAF_SCALE = 1.5


def draw(shape: list[int], seed: int, dtype: str, device: str) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(shape, generator=generator, dtype=torch.float64)
    return values.to(DTYPES[dtype]).to(device)


def build_start(case: Case, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(the tensor the function receives, the leaf whose .grad shows the gradient flow)."""
    kind, shape = case["kind"], case["shape"]
    if kind == "zero_dim":
        shape = []
    if kind == "transposed":
        base = draw(shape[::-1], case["seed"], case["dtype"], device)
        return base.t(), base
    source = draw(shape, case["seed"], case["dtype"], device)
    if kind == "plain":
        return source, source
    leaf = source.requires_grad_()
    if kind == "view_of_leaf":
        return leaf[1:3], leaf
    if kind == "unbind_view":
        return (leaf * 1).unbind(0)[0], leaf
    if kind == "no_grad_view":
        with torch.no_grad():
            return leaf[1:3], leaf
    if kind == "nonleaf":
        return leaf * NONLEAF_SCALE, leaf
    return leaf, leaf


def build_value(case: Case, device: str) -> Any:
    """The second argument: a tensor of `value_shape`, a Python float, or a string."""
    value = case.get("value", "tensor")
    if value == "float":
        return 0.75
    if value == "string":
        return "one"
    shape: list[int] = case["value_shape"] if "value_shape" in case else case["shape"]
    return draw(shape, case["seed"] + 1, case["dtype"], device)


def loss_weights(shape: list[int], case: Case, device: str) -> torch.Tensor:
    """Weights of the loss `(result * weights).sum()` whose gradient the probes look at."""
    return draw(shape, case["seed"] + 2, case["dtype"], device)


def witnessed(function: str, case: Case) -> list[tuple[str, tuple[int, ...]]]:
    """The leaf `update_leaf_` must update in place, as (dtype, shape): the outside witness
    holds it (sandbox/witness.py)."""
    if function == "update_leaf_" and case["kind"] == "leaf":
        return [(case["dtype"], tuple(case["shape"]))]
    return []
