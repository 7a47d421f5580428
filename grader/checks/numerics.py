"""Numerics: values against a float64 reference cast to the input's dtype, within per-dtype
tolerances (docs/semantics.md#numerics-tolerances)."""

from __future__ import annotations

import math
from typing import Any

import torch

# assert_close's defaults for float32/float64; looser for half precision, where a correct
# step-by-step in-place computation cannot meet them (docs/semantics.md#numerics-tolerances).
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1.3e-6, 1e-5),
    torch.float16: (4e-3, 4e-3),
    torch.bfloat16: (3e-2, 3e-2),
}


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for `dtype`; exact for integer and bool tensors."""
    return TOLERANCES.get(dtype, (0.0, 0.0))


def mismatch(
    actual: torch.Tensor,
    expected: torch.Tensor,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = True,
) -> dict[str, Any] | None:
    """None when `actual` matches `expected`, else the numbers that describe the mismatch.

    Like `torch.testing.assert_close` but returned as data: the caller words it. NaN matches NaN
    (the reference decides where NaN belongs). Both tensors are compared on the CPU in float64.
    """
    if tuple(actual.shape) != tuple(expected.shape):
        return {"reason": "shape", "actual_shape": list(actual.shape),
                "expected_shape": list(expected.shape)}
    default_rtol, default_atol = tolerance(expected.dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    a = actual.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)
    if a.numel() == 0:
        return None
    both_nan = torch.isnan(a) & torch.isnan(e)
    if not equal_nan:
        both_nan = torch.zeros_like(both_nan)
    same_inf = torch.isinf(e) & (a == e)
    diff = (a - e).abs()
    allowed = atol + rtol * e.abs()
    bad = ~((diff <= allowed) | both_nan | same_inf)
    count = int(bad.sum())
    if count == 0:
        return None
    diff = torch.where(bad, diff, torch.zeros_like(diff)).nan_to_num(nan=math.inf)
    flat = int(torch.argmax(diff))
    index = unravel(flat, tuple(a.shape))
    return {
        "reason": "values",
        "mismatched": count,
        "total": a.numel(),
        "percent": round(100.0 * count / a.numel(), 1),
        "max_abs_diff": float(diff.reshape(-1)[flat]),
        "index": list(index),
        "actual_value": float(a.reshape(-1)[flat]),
        "expected_value": float(e.reshape(-1)[flat]),
        "rtol": rtol,
        "atol": atol,
    }


def unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index of element `flat` of a row-major tensor of `shape` (torch.unravel_index
    imports sympy on its first call: a student's first failing report waited for it)."""
    index = []
    for size in reversed(shape):
        flat, position = divmod(flat, size) if size else (flat, 0)
        index.append(position)
    return tuple(reversed(index))
