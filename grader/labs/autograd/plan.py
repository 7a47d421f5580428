"""Lab autograd's plan: its functions, the cases each is graded on, and their signatures.

What the child-side probes may import (they run beside student code, which must never reach a
judge or a reference): which inputs, as data; inputs.py builds their tensors.
"""

from __future__ import annotations

from functools import cache

from grader.labs.autograd.inputs import Case

# The lab's functions, in the order students meet them: the one statement of them (the
# probes' FUNCTIONS and the judge's Lab.functions are this tuple).
FUNCTIONS = ("update_leaf_", "add_or_copy", "fixed_block", "snapshot", "alias")
IN_PLACE_ALLOWED = ("plain", "nonleaf", "no_grad_leaf")
FORBIDDEN = ("leaf", "view_of_leaf", "unbind_view", "no_grad_view")
# The shape of the tensor each kind hands to the function, when not the case's own shape.
VIEW_SHAPES = {"view_of_leaf": [2, 3], "no_grad_view": [2, 3], "unbind_view": [3]}
# The fix creates at most five tensors the size of `x @ w`; dropping every in-place op creates
# six (docs/semantics.md#allocation-budgets).
MAX_FULL_SIZE_TENSORS = 5


# --- cases ---------------------------------------------------------------------------------

@cache
def _lab_cases(function: str) -> tuple[Case, ...]:
    cases: list[Case] = []
    if function == "update_leaf_":
        for n, (dtype, value, has_grad, shape) in enumerate([
            ("float32", "tensor", True, [4, 3]), ("float64", "tensor", False, [5]),
            ("float32", "float", True, [2, 3]), ("float64", "row", True, [3, 4]),
            ("float32", "tensor", False, []),
        ]):
            case = {"id": f"leaf.{n}", "kind": "leaf", "dtype": dtype, "shape": shape,
                    "seed": 40 + n, "value": "tensor" if value == "row" else value,
                    "has_grad": has_grad}
            if value == "row":
                case["value_shape"] = shape[-1:]
            cases.append(case)
    elif function == "add_or_copy":
        n = 0
        for dtype in ("float32", "float64"):
            for kind in (*IN_PLACE_ALLOWED, *FORBIDDEN):
                for value in ("tensor", "float"):
                    case = {"id": f"{kind}.{dtype}.{value}", "kind": kind, "dtype": dtype,
                            "shape": [4, 3], "seed": 60 + n, "value": value,
                            "group": "allowed" if kind in IN_PLACE_ALLOWED else "forbidden"}
                    if kind in VIEW_SHAPES:
                        case["value_shape"] = VIEW_SHAPES[kind]
                    cases.append(case)
                    n += 1
        cases += [
            {"id": "error.broadcast", "kind": "plain", "dtype": "float32", "shape": [3],
             "value_shape": [2, 3], "seed": 90, "group": "error"},
            {"id": "error.type", "kind": "plain", "dtype": "float32", "shape": [3],
             "value": "string", "seed": 91, "group": "error"},
            {"id": "error.leaf_shape", "kind": "nonleaf", "dtype": "float32", "shape": [3],
             "value_shape": [2, 3], "seed": 92, "group": "error"},
        ]
    elif function == "fixed_block":
        cases += [
            {"id": "float32", "dtype": "float32", "x_shape": [8, 6], "w_shape": [6, 5],
             "seed": 70, "measure": "state"},
            {"id": "float64", "dtype": "float64", "x_shape": [3, 4], "w_shape": [4, 2],
             "seed": 71, "measure": "state"},
            {"id": "gradcheck", "dtype": "float64", "x_shape": [3, 4], "w_shape": [4, 2],
             "seed": 72, "measure": "gradcheck"},
            {"id": "allocation", "dtype": "float32", "x_shape": [64, 48], "w_shape": [48, 96],
             "seed": 73, "measure": "allocation"},
        ]
    else:  # snapshot, alias
        cases += [{"id": kind, "kind": kind, "dtype": "float32", "shape": [4, 3], "seed": 80 + n}
                  for n, kind in enumerate(("leaf", "nonleaf", "plain", "transposed",
                                            "zero_dim", "view_of_leaf"))]
    return tuple(cases)


def lab_cases(function: str) -> list[Case]:
    return list(_lab_cases(function))


SIGNATURES: dict[str, list[tuple[str, str | None]]] = {
    "update_leaf_": [("leaf", None), ("delta", None)],
    "add_or_copy": [("t", None), ("value", None)],
    "fixed_block": [("x", None), ("w", None)],
    "snapshot": [("t", None)],
    "alias": [("t", None)],
}
