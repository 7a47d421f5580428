"""Lab tensor_ops' plan: its functions, the cases each is graded on, and their signatures.

What the child-side probes may import (they run beside student code, which must never reach a
judge or a reference): which inputs, as data; inputs.py builds their tensors.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import torch

from grader.labs.tensor_ops.inputs import HALF, LAYOUTS, Case, view_of

# The lab's functions, in the order students meet them: the one statement of them (the
# probes' FUNCTIONS and the judge's Lab.functions are this tuple).
FUNCTIONS = ("relu_", "clamp_", "axpy_", "ema_update_", "normalize_", "standardize_", "softmax_")
REDUCTIONS = ("normalize_", "standardize_", "softmax_")
EDGE_LAYOUTS = ("zero_dim", "empty")
VIEW_LAYOUTS = ("transpose", "stride", "slice3d", "large_transpose")

# Per function: positional args ("X" is updated in place, "OTHER" the second tensor), the
# variants graded (keyword arguments, shape of OTHER relative to X), and the special fills.
SPECS: dict[str, dict[str, Any]] = {
    "relu_": {"args": ["X"], "variants": [{}], "fills": ["extremes"]},
    # lo > hi: torch.clamp documents that every element becomes hi.
    "clamp_": {"args": ["X"], "fills": ["extremes"], "variants": [
        {"kwargs": {"lo": -0.5}}, {"kwargs": {"hi": 0.3}}, {"kwargs": {"lo": -0.5, "hi": 0.5}},
        {"kwargs": {"lo": 0.5, "hi": -0.5}}]},
    # x broadcast to y from a row, a column or a 0-dim tensor; never the other way (rejects).
    "axpy_": {"args": ["X", 0.5, "OTHER"], "fills": [], "variants": [
        {"other": "same"}, {"other": "row", "args": ["X", -2.0, "OTHER"]},
        {"other": "column"}, {"other": "scalar"}]},
    "ema_update_": {"args": ["X", "OTHER", 0.9], "fills": [], "variants": [
        {"other": "same"}, {"other": "same", "args": ["X", "OTHER", 0.25]}]},
    "normalize_": {"args": ["X"], "fills": ["zero_rows"], "variants": [
        {}, {"kwargs": {"dim": 0}}, {"kwargs": {"eps": 1e-6}}]},
    "standardize_": {"args": ["X"], "fills": ["constant_rows"], "variants": [
        {}, {"kwargs": {"dim": 0}}]},
    "softmax_": {"args": ["X"], "fills": ["large"], "variants": [{}, {"kwargs": {"dim": 0}}]},
}


# --- cases ---------------------------------------------------------------------------------

def logical_shape(layout: str) -> list[int]:
    return list(view_of(torch.empty(LAYOUTS[layout], device="meta"), layout).shape)


def _case(function: str, group: str, number: int, *, dtype: str, layout: str, variant: dict,
          fill: str = "normal", measure: str = "state", meters: str = "") -> Case | None:
    shape = logical_shape(layout)
    kwargs = variant.get("kwargs", {})
    if "dim" in kwargs and len(shape) < 2:
        return None  # dim=0 is graded on 2-D inputs
    if group in ("values", "half", "views"):
        # Special inputs are cases of their own, read by a check of their own (edge_shapes,
        # broadcasts_x): a function that raises on an empty tensor loses that check only.
        if layout in EDGE_LAYOUTS:
            group = "edges"
        elif variant.get("other") not in (None, "same"):
            group = "broadcast"
    case: Case = {
        "id": f"{group}.{number}", "group": group, "function": function, "dtype": dtype,
        "layout": layout, "fill": fill, "measure": measure,
        # Allocation cases measure memory, not values: they share inputs (drawn once, in the
        # zygote, and copied by each child; see inputs.py).
        "seed": 1 if measure == "allocation" else 1000 + number,
        "args": variant.get("args", SPECS[function]["args"]), "kwargs": kwargs,
    }
    if meters:
        case["meters"] = meters  # "dispatch": the dispatch tracker alone (probes.py)
    other = variant.get("other")
    if other == "same":
        case["other_shape"] = shape
    elif other == "row":
        if not shape:
            return None
        case["other_shape"] = shape[-1:]
    elif other == "column":
        if len(shape) < 2:
            return None
        case["other_shape"] = [*shape[:-1], 1]
    elif other == "scalar":
        case["other_shape"] = []
    return case


@cache
def _lab_cases(function: str) -> tuple[Case, ...]:
    spec = SPECS[function]
    variants = spec["variants"]
    planned: list[tuple[str, dict[str, Any]]] = []
    for dtype in ("float32", "float64"):
        for variant in variants:
            planned += [("values", {"dtype": dtype, "layout": layout, "variant": variant})
                        for layout in ("contiguous", "zero_dim", "empty")]
            planned += [("values", {"dtype": dtype, "layout": "contiguous", "variant": variant,
                                    "fill": fill}) for fill in spec["fills"]]
    for dtype in HALF:
        for variant in variants:
            planned.append(("half", {"dtype": dtype, "layout": "contiguous", "variant": variant}))
            planned += [("half", {"dtype": dtype, "layout": "contiguous", "variant": variant,
                                  "fill": fill}) for fill in spec["fills"] if fill != "zero_rows"]
    for dtype in ("float32", "float64"):
        for variant in variants:
            planned += [("views", {"dtype": dtype, "layout": layout, "variant": variant})
                        for layout in ("transpose", "stride", "slice3d")]
    # Autograd's own view of the writes (probes.probe_autograd): float64, so that gradients
    # compare closely; read by version_advances.
    planned.append(("autograd", {"dtype": "float64", "layout": "contiguous",
                                 "variant": variants[-1], "measure": "autograd"}))
    allocation_variants = [v for v in variants if "dim" in v.get("kwargs", {})] or variants[:1]
    for variant in ([variants[0], *allocation_variants] if function in REDUCTIONS
                    else allocation_variants):
        planned += [("allocation", {"dtype": "float32", "layout": layout, "variant": variant,
                                    "measure": "allocation"})
                    for layout in ("large", "large_transpose")]
    # float64 is measured too: a `.float()` copy of a float64 argument is a temporary of
    # the argument's size that float32 inputs never show. (Not half precision: on the CPU
    # torch's own reductions upcast a float16 input to a full-size buffer inside the op,
    # so correct code would fail.)
    planned.append(("allocation", {"dtype": "float64", "layout": "large",
                                   "variant": variants[0], "measure": "allocation",
                                   "meters": "dispatch"}))
    cases = [_case(function, group, number, **details)
             for number, (group, details) in enumerate(planned)]
    if function == "clamp_":  # neither bound, like torch.clamp(x)
        cases.append({"id": "rejects", "group": "rejects", "function": function,
                      "dtype": "float32", "layout": "contiguous", "measure": "rejects",
                      "seed": 7, "args": ["X"], "kwargs": {}})
    if function == "axpy_":  # an x that would grow y, which y.add_ refuses
        cases.append({"id": "rejects", "group": "rejects", "function": function,
                      "dtype": "float32", "layout": "contiguous", "measure": "rejects",
                      "seed": 7, "args": ["X", 0.5, "OTHER"], "kwargs": {},
                      "other_shape": [2, *LAYOUTS["contiguous"]]})
    unique: dict[str, Case] = {}
    for case in cases:
        if case is not None:
            unique.setdefault(_signature(case), case)
    return tuple(unique.values())


def _signature(case: Case) -> str:
    return repr({k: v for k, v in case.items() if k not in ("id", "seed")})


def lab_cases(function: str) -> list[Case]:
    return list(_lab_cases(function))


SIGNATURES: dict[str, list[tuple[str, str | None]]] = {
    "relu_": [("x", None)],
    "clamp_": [("x", None), ("lo", "None"), ("hi", "None")],
    "axpy_": [("y", None), ("alpha", None), ("x", None)],
    "ema_update_": [("avg", None), ("new", None), ("decay", None)],
    "normalize_": [("x", None), ("dim", "-1"), ("eps", "1e-12")],
    "standardize_": [("x", None), ("dim", "-1"), ("eps", "1e-05")],
    "softmax_": [("x", None), ("dim", "-1")],
}
