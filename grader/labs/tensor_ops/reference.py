"""Float64 references for tensor_ops, computed in the grading process from the cast inputs."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.autograd.forward_ad as forward_ad
import torch.nn.functional as F

from grader.labs.tensor_ops.inputs import (
    DTYPES,
    Case,
    build_args,
    build_base,
    build_other,
    loss_weights,
    view_of,
)


def _standardize(x: torch.Tensor, dim: int = -1, eps: float = 1e-5) -> torch.Tensor:
    var, mean = torch.var_mean(x, dim=dim, keepdim=True, correction=0)
    return (x - mean) / torch.sqrt(var + eps)


def _clamp(x: torch.Tensor, lo: float | None = None, hi: float | None = None) -> torch.Tensor:
    return torch.clamp(x, min=lo, max=hi)


REFERENCES: dict[str, Callable[..., torch.Tensor]] = {
    "relu_": torch.relu,
    "clamp_": _clamp,
    "axpy_": lambda y, alpha, x: y + alpha * x,
    "ema_update_": lambda avg, new, decay: decay * avg + (1 - decay) * new,
    "normalize_": lambda x, dim=-1, eps=1e-12: F.normalize(x, p=2.0, dim=dim, eps=eps),
    "standardize_": _standardize,
    "softmax_": lambda x, dim=-1: torch.softmax(x, dim=dim),
}


def expected_grads(case: Case) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The gradients of `(f(x, other) * w).sum()` for the leaves under `x` and the second
    tensor (probes.probe_autograd), in float64, through the out-of-place reference: what
    autograd gives for a function whose every write it recorded (unless one broke a tensor it
    saved, when backward raises)."""
    leaf = build_base(case, "cpu").double().requires_grad_()
    other = build_other(case, "cpu")
    other_leaf = None if other is None else other.double().requires_grad_()
    args: list[Any] = build_args(case, leaf * 1.0,
                                 None if other_leaf is None else other_leaf * 1.0)
    result = REFERENCES[case["function"]](*args, **case.get("kwargs", {}))
    (result * loss_weights(result)).sum().backward()
    assert leaf.grad is not None
    dtype = DTYPES[case["dtype"]]
    return leaf.grad.to(dtype), None if other_leaf is None or other_leaf.grad is None else (
        other_leaf.grad.to(dtype))


def expected_tangent(case: Case) -> torch.Tensor:
    """The forward-mode derivative of `f` at `x` along the tangent `w` (probes.probe_autograd),
    in float64, through the out-of-place reference."""
    primal = build_base(case, "cpu").double()
    other = build_other(case, "cpu")
    with forward_ad.dual_level():
        x = forward_ad.make_dual(primal, loss_weights(primal))
        if other is not None:
            other = forward_ad.make_dual(other.double(), loss_weights(other.double()))
        args: list[Any] = build_args(case, x, other)
        result = REFERENCES[case["function"]](*args, **case.get("kwargs", {}))
        tangent = forward_ad.unpack_dual(result).tangent
    assert tangent is not None
    return tangent.to(DTYPES[case["dtype"]])


def expected(case: Case) -> tuple[torch.Tensor, torch.Tensor]:
    """(expected argument values, expected base values), both in the case's dtype on the CPU.

    The reference runs in float64 on the dtype-rounded inputs; for a view the base is expected
    to hold the new values in the view's positions and its old values everywhere else.
    """
    base = build_base(case, "cpu").double()
    other = build_other(case, "cpu")
    x = view_of(base, case["layout"])
    args: list[Any] = build_args(case, x, None if other is None else other.double())
    with warnings.catch_warnings():  # var of an empty or 1-element dim warns; nan is expected
        warnings.simplefilter("ignore")
        result = REFERENCES[case["function"]](*args, **case.get("kwargs", {}))
    x.copy_(result)  # writes into `base` through the view: our own float64 copy
    dtype = DTYPES[case["dtype"]]
    return x.to(dtype), base.to(dtype)
