"""Seeded cases for tensor_ops, built identically in the sandbox child and the grading process.

A case names the function, the dtype, how the first argument is laid out (contiguous, 0-dim,
empty, or a view of a larger base: transpose, strided slice, 3-D slice), what fills it
(normal values, ±inf/nan, huge magnitudes, zero or constant rows), and the other arguments.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import torch

from grader.checks.dtypes import DTYPES

Case = dict[str, Any]

HALF = ("float16", "bfloat16")

# layout -> (shape of the base tensor, how the argument is cut from it)
LAYOUTS: dict[str, list[int]] = {
    "contiguous": [4, 6],
    "zero_dim": [],
    "empty": [0, 5],
    "transpose": [6, 4],
    "stride": [4, 12],
    "slice3d": [2, 4, 8],
    "large": [512, 1024],
    "large_transpose": [1024, 512],
}


def view_of(base: torch.Tensor, layout: str) -> torch.Tensor:
    """The argument as a view of `base` (the base itself for non-view layouts)."""
    if layout in ("transpose", "large_transpose"):
        return base.t()
    if layout == "stride":
        return base[:, ::2]
    if layout == "slice3d":
        return base[:, :, 1:7]
    return base


FILLS = ("normal", "extremes", "large", "zero_rows", "constant_rows")


def _fill(shape: list[int], fill: str, generator: torch.Generator, dtype: str) -> torch.Tensor:
    values = torch.randn(shape, generator=generator, dtype=torch.float64)
    if fill == "extremes" and values.numel() >= 3:
        flat = values.view(-1)
        flat[0], flat[1], flat[2] = float("inf"), float("-inf"), float("nan")
    elif fill == "large":
        # exp() of these overflows unless the maximum is subtracted first.
        values = values * (1e3 if dtype in HALF else 1e4)
    elif fill == "zero_rows" and values.dim() == 2:
        values[0].zero_()
        values[:, 0].zero_()
    elif fill == "constant_rows" and values.dim() == 2:
        values[0].fill_(3.0)
        values[:, 0].fill_(-2.0)
    return values


@cache
def _base_values(seed: int, shape: tuple[int, ...], fill: str, dtype: str) -> torch.Tensor:
    """Drawn once per process and copied per use: the zygote draws every case at start, so a
    child copies its 4 MB inputs instead of drawing them again."""
    generator = torch.Generator().manual_seed(seed)
    return _fill(list(shape), fill, generator, dtype).to(DTYPES[dtype])


@cache
def _other_values(seed: int, shape: tuple[int, ...], dtype: str) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(list(shape), generator=generator, dtype=torch.float64).to(DTYPES[dtype])


def build_base(case: Case, device: str) -> torch.Tensor:
    shape = case.get("base_shape") or LAYOUTS[case["layout"]]  # base_shape: hidden cases
    values = _base_values(case["seed"], tuple(shape), case.get("fill", "normal"), case["dtype"])
    return values.to(device=device, copy=True)


def build_other(case: Case, device: str) -> torch.Tensor | None:
    """The second tensor argument (`x` of axpy_, `new` of ema_update_), if the case has one."""
    if "other_shape" not in case:
        return None
    values = _other_values(case["seed"] + 1, tuple(case["other_shape"]), case["dtype"])
    return values.to(device=device, copy=True)


def build_args(case: Case, x: torch.Tensor, other: torch.Tensor | None) -> list[Any]:
    """Positional arguments: "X" is the tensor updated in place, "OTHER" the second tensor."""
    mapping = {"X": x, "OTHER": other}
    return [mapping.get(arg, arg) if isinstance(arg, str) else arg for arg in case["args"]]


def loss_weights(x: torch.Tensor) -> torch.Tensor:
    """The weights of the loss `(x * w).sum()` whose gradient the autograd case compares: all
    different, as a plain sum would be blind (softmax's rows always sum to 1)."""
    return torch.linspace(-1.0, 2.0, x.numel(), dtype=x.dtype, device=x.device).reshape(x.shape)


def witnessed(function: str, case: Case) -> list[tuple[str, tuple[int, ...]]]:
    """The tensor `function` must update in place, as (dtype, shape): the base its argument is
    a view of. The outside witness holds it (sandbox/witness.py)."""
    if case["measure"] != "state":
        return []
    return [(case["dtype"], tuple(case.get("base_shape") or LAYOUTS[case["layout"]]))]
