"""Seeded cases, built identically in the sandbox child and in the grading process.

A case is plain JSON-able data (it crosses the process boundary); `build_*` turn it into
tensors. Inputs are drawn in float64 on the CPU from a seeded generator, then cast and moved, so
both processes see bit-identical inputs and the reference can be computed from the cast values.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import torch

from grader.checks.dtypes import DTYPES
from grader.checks.findings import Phrase, phrase

Case = dict[str, Any]


# Kinds of gradient a zero_grad case gives each parameter.
GRAD_KINDS = ("normal", "none", "inf_nan", "grad_fn", "noncontig", "view", "leaf")


def _draw(shape: list[int], generator: torch.Generator) -> torch.Tensor:
    return torch.randn(shape, generator=generator, dtype=torch.float64)


@cache
def _param_values(seed: int, dtype: str, shapes: tuple[tuple[int, ...], ...]
                  ) -> tuple[torch.Tensor, ...]:
    """Drawn once per process and copied per use: the zygote builds every case at start, so a
    child copies a 1 MB input instead of drawing it again
    (docs/sandbox.md#numbers-behind-the-code)."""
    generator = torch.Generator().manual_seed(seed)
    return tuple(_draw(list(shape), generator).to(DTYPES[dtype]) for shape in shapes)


def build_params(case: Case, device: str) -> list[torch.Tensor]:
    """Leaf tensors that require grad, one per shape in the case."""
    values = _param_values(case["seed"], case["dtype"], tuple(map(tuple, case["shapes"])))
    return [v.to(device=device, copy=True).requires_grad_() for v in values]


@cache
def _grad_values(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    return _draw(list(shape), torch.Generator().manual_seed(seed))


def build_grad(param: torch.Tensor, kind: str, seed: int) -> torch.Tensor | None:
    """A gradient for `param` of the given kind (see GRAD_KINDS)."""
    if kind not in GRAD_KINDS:
        raise ValueError(f"unknown grad kind {kind!r}; one of {', '.join(GRAD_KINDS)}")
    shape = list(param.shape)
    if kind == "none":
        return None
    drawn = _grad_values(tuple(shape), seed)
    if kind == "noncontig":
        # Non-contiguous but not a view (torch's own zero_grad may `detach_()` it in place,
        # which a view would refuse): column-major, or every other element for 1-D.
        strides = [2] if len(shape) == 1 else [math.prod(shape[:i]) for i in range(len(shape))]
        strided = torch.empty_strided(shape, strides, dtype=param.dtype, device=param.device)
        return strided.copy_(drawn)
    values = drawn.to(dtype=param.dtype, device=param.device, copy=True)
    if kind == "inf_nan":
        flat = values.view(-1)
        flat[0], flat[-1] = float("inf"), float("nan")
        if flat.numel() > 2:
            flat[1] = float("-inf")
    if kind == "grad_fn":
        # A create_graph gradient: a non-leaf that carries history.
        return (param.detach().requires_grad_() * values).mul(2.0)
    if kind == "view":
        # A view without history, as a gradient bucket hands out (DDP's gradient_as_bucket_view):
        # `detach_()` refuses it, so torch.optim detaches only a gradient with a grad_fn.
        bucket = torch.zeros([2, *shape], dtype=param.dtype, device=param.device)
        return bucket[1].copy_(values)
    if kind == "leaf":
        # A gradient that is itself a leaf requiring grad: torch.optim turns requires_grad off
        # before zeroing it, where zero_() alone is autograd's in-place error on a leaf.
        return values.requires_grad_()
    return values


def attach_grads(params: list[torch.Tensor], kinds: list[str], seed: int) -> None:
    for index, (param, kind) in enumerate(zip(params, kinds, strict=True)):
        param.grad = build_grad(param, kind, seed * 1000 + index)


def step_grads(case: Case, params: list[torch.Tensor], step: int) -> list[torch.Tensor | None]:
    """Gradients for optimizer step `step` (0-based); some are None or zero by the schedule."""
    grads: list[torch.Tensor | None] = []
    for index, param in enumerate(params):
        if [index, step] in case.get("none_grads", []):
            grads.append(None)
            continue
        grad = build_grad(param, "normal", case["seed"] * 7919 + step * 97 + index)
        if grad is not None and [index, step] in case.get("zero_grads", []):
            grad = torch.zeros_like(grad)
        elif grad is not None and "grad_scale" in case:
            grad = grad * case["grad_scale"]  # small gradients: where eps matters
        grads.append(grad)
    return grads


# The gradients a zero_grad case keeps in the outside witness: plain contiguous leaves (a
# strided or history-carrying gradient would lose what makes it that case in a copy).
WITNESSED_GRADS = ("normal", "inf_nan")


def witnessed(function: str, case: Case) -> list[tuple[str, tuple[int, ...]]]:
    """The tensors of `case` that `function` must update in place, as (dtype, shape), in the
    order the probe builds them: the outside witness holds them (sandbox/witness.py). The
    parameters of sgd_step's state cases and of the optimizers' trajectories; the gradients
    of zero_grad's cases (WITNESSED_GRADS)."""
    if (function == "sgd_step" and case.get("measure") == "state") or (
            case.get("probe") == "trajectory"):
        return [(case["dtype"], tuple(shape)) for shape in case["shapes"]]
    if case.get("probe") == "zero_grad":
        return [(case["dtype"], tuple(shape))
                for shape, kind in zip(case["shapes"], case["grads"], strict=True)
                if kind in WITNESSED_GRADS]
    return []


def describe(case: Case) -> list[Phrase]:
    """A case in a student's words (what feedback says instead of its id): the parameters'
    dtype and each special gradient they hold, or the optimizer's configuration."""
    probe = case["probe"]
    if probe in ("trajectory", "validation", "optimizer_zero_grad"):
        config = ", ".join(f"{key}={value}" for key, value in case["config"].items())
        words = [phrase(f"case_{probe}", cls=case["class"], config=config,
                        steps=case.get("steps", 0))]
        if case.get("none_grads"):
            words.append(phrase("case_none_grads"))
        return words
    if case.get("measure") == "allocation":
        return [phrase("case_large_param", dtype=case["dtype"],
                       shape="×".join(map(str, case["shapes"][0])))]
    words = [phrase("case_params", count=len(case["shapes"]), dtype=case["dtype"])]
    words += [phrase(f"case_grad_{kind}") for kind in dict.fromkeys(case["grads"])
              if kind != "normal"]
    if case.get("iterable") == "generator":
        words.append(phrase("case_generator"))
    if probe == "zero_grad" and case.get("set_to_none") is not False:
        words.append(phrase("case_set_to_none_default" if case.get("set_to_none") is None
                            else "case_set_to_none"))
    return words
