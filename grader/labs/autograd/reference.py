"""Float64 references for lab autograd, computed in the grading process from the cast inputs:
what each function's result, gradient or error should be."""

from __future__ import annotations

from typing import Any

import torch

from grader.checks.dtypes import DTYPES
from grader.labs.autograd.inputs import (
    NONLEAF_SCALE,
    Case,
    build_start,
    build_value,
    draw,
    loss_weights,
)
from grader.labs.base import cached_by_content


def start_values(case: Case) -> torch.Tensor:
    t, _ = build_start(case, "cpu")
    return t.detach().double()


def value64(case: Case) -> Any:
    value = build_value(case, "cpu")
    return value.double() if isinstance(value, torch.Tensor) else value


@cached_by_content
def expected_add(case: Case) -> torch.Tensor:
    return (start_values(case) + value64(case)).to(DTYPES[case["dtype"]])


@cached_by_content
def expected_leaf_grad(case: Case) -> torch.Tensor | None:
    """The gradient the source leaf should receive from `(result * weights).sum()`."""
    if case["kind"] in ("plain", "no_grad_view"):
        return None  # no autograd path: a no_grad view's gradient reaches no leaf
    start = start_values(case)
    weights = loss_weights(list(start.shape), case, "cpu").double()
    if case["kind"] == "nonleaf":
        grad = NONLEAF_SCALE * weights
    elif case["kind"] == "view_of_leaf":
        grad = torch.zeros(case["shape"], dtype=torch.float64)
        grad[1:3] = weights
    elif case["kind"] == "unbind_view":
        grad = torch.zeros(case["shape"], dtype=torch.float64)
        grad[0] = weights
    else:
        grad = weights
    return grad.to(DTYPES[case["dtype"]])


@cached_by_content
def expected_error(case: Case) -> tuple[str, str]:
    """The error torch itself raises for `t.add_(value)` on this case: (type, first line)."""
    t, _ = build_start(case, "cpu")
    try:
        t.add_(build_value(case, "cpu"))
    except Exception as exc:  # the reference error, raised by torch on our own tensors
        return type(exc).__name__, str(exc).splitlines()[0][:500]
    raise RuntimeError(f"case {case['id']} was expected to raise")


def reference_block(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return ((x @ w).relu().sigmoid() * 2).exp().add(1).sum()


@cached_by_content
def expected_block(case: Case) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(value, x.grad, w.grad) of the out-of-place block, in float64, cast to the case dtype."""
    x = draw(case["x_shape"], case["seed"], case["dtype"], "cpu").double().requires_grad_()
    w = draw(case["w_shape"], case["seed"] + 1, case["dtype"], "cpu").double().requires_grad_()
    value = reference_block(x, w)
    value.backward()
    dtype = DTYPES[case["dtype"]]
    assert x.grad is not None and w.grad is not None
    return value.detach().to(dtype), x.grad.to(dtype), w.grad.to(dtype)
