"""Lab optim's plan: its functions, the cases each is graded on, and their signatures, as data.

What the child-side probes may import (they run beside student code, which must never reach a
judge or a reference): no expected values here, only which inputs each function is graded on.
Each case is plain JSON-able data; inputs.py builds its tensors.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from grader.labs.optim.inputs import Case

# The lab's functions and classes, in the order students meet them: the one statement of
# them (the probes' FUNCTIONS and the judge's Lab.functions are this tuple).
FUNCTIONS = ("zero_grad", "sgd_step", "SGD", "Adam")
# What no function may call (checks/policy.py): recorded in the child, judged in the grader.
FORBIDDEN_PACKAGE = "torch.optim"
# The state each optimizer keeps per parameter, which must keep its identity and memory.
STATE_KEYS = {"SGD": ("momentum_buffer",), "Adam": ("exp_avg", "exp_avg_sq")}

SHAPES = [[6, 4], [4], [2, 3, 2]]
STEPS = 12


# --- cases ---------------------------------------------------------------------------------

def _zero_grad_cases() -> list[Case]:
    base = {"probe": "zero_grad", "seed": 11, "dtype": "float32", "iterable": "list",
            "set_to_none": False}
    return [
        {**base, "id": "mixed", "shapes": [[4, 3], [2, 3, 4], [5, 2]],
         "grads": ["normal", "inf_nan", "noncontig"]},
        # Each special input is a case of its own, read by its own check: a missing
        # `if p.grad is None` guard costs that check, not every check of the function.
        {**base, "id": "no_grad", "shapes": [[6], [3]], "grads": ["normal", "none"]},
        {**base, "id": "default", "set_to_none": None, "shapes": [[3, 2], [7]],
         "grads": ["normal", "normal"]},
        {**base, "id": "grad_fn", "shapes": [[3, 3], [4]], "grads": ["grad_fn", "normal"]},
        {**base, "id": "float16_generator", "dtype": "float16", "iterable": "generator",
         "shapes": [[8], [2, 2]], "grads": ["inf_nan", "normal"]},
        {**base, "id": "to_none", "set_to_none": True, "shapes": [[3], [2, 2], [5]],
         "grads": ["normal", "none", "inf_nan"]},
        # Gradients torch.optim zeroes that a shortcut refuses: a view (`detach_()` raises)
        # and a leaf requiring grad (`zero_()` alone raises); read by `edge_grads` alone.
        {**base, "id": "view_grad", "shapes": [[4, 3], [5]], "grads": ["view", "normal"]},
        {**base, "id": "leaf_grad", "shapes": [[3, 4], [6]], "grads": ["leaf", "normal"]},
    ]


def _sgd_step_cases() -> list[Case]:
    base = {"probe": "sgd_step", "seed": 23, "iterable": "list", "measure": "state"}
    return [
        {**base, "id": "float32", "dtype": "float32", "lr": 0.1,
         "shapes": [[16, 8], [3, 4, 5]], "grads": ["normal", "noncontig"]},
        {**base, "id": "no_grad", "dtype": "float32", "lr": 0.1, "shapes": [[8], [4]],
         "grads": ["normal", "none"]},
        {**base, "id": "float64_generator", "dtype": "float64", "lr": 0.01,
         "iterable": "generator", "shapes": [[10], [2, 5]], "grads": ["normal", "normal"]},
        {**base, "id": "allocation", "dtype": "float32", "lr": 0.1, "measure": "allocation",
         "shapes": [[512, 512]], "grads": ["normal"]},
        # Every dtype graded is measured: a `.float()` detour copies a float64 parameter only.
        # The dispatch tracker names that copy; the other meters ran on the float32 case.
        {**base, "id": "allocation_float64", "dtype": "float64", "lr": 0.01,
         "measure": "allocation", "meters": "dispatch", "shapes": [[128, 128]],
         "grads": ["normal"]},
    ]


SGD_CONFIGS: dict[str, dict[str, Any]] = {
    "plain": {"lr": 0.1},
    "momentum": {"lr": 0.05, "momentum": 0.9},
    "dampening": {"lr": 0.05, "momentum": 0.9, "dampening": 0.1},
    "nesterov": {"lr": 0.05, "momentum": 0.9, "nesterov": True},
    "weight_decay": {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01},
    "maximize": {"lr": 0.05, "momentum": 0.5, "weight_decay": 0.02, "maximize": True},
    "float64_all": {"lr": 0.02, "momentum": 0.8, "weight_decay": 0.05, "nesterov": True,
                    "maximize": True},
    "skips_missing": {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01},
}
ADAM_CONFIGS: dict[str, dict[str, Any]] = {
    "default": {"lr": 1e-2},
    "weight_decay": {"lr": 1e-2, "weight_decay": 0.1},
    "betas_eps": {"lr": 5e-3, "betas": [0.8, 0.99], "eps": 1e-6},
    "float64": {"lr": 1e-2, "betas": [0.9, 0.95]},
    "small_grads": {"lr": 1e-2, "eps": 1e-6},
    "skips_missing": {"lr": 1e-2, "weight_decay": 0.1},
}
# Each hyperparameter at an edge of its documented range, where a guard written against the
# wrong constant (`momentum != 1` for `!= 0`) or a branch taken for the wrong reason shows:
# the momentum branch must not run at momentum 0 whatever the dampening, and must at 1. One
# check per class reads them all (`<cls>.trajectory.boundaries`), over a few steps each.
SGD_BOUNDARIES: dict[str, dict[str, Any]] = {
    "momentum_zero_dampening": {"lr": 0.05, "momentum": 0.0, "dampening": 0.5},
    "momentum_one": {"lr": 0.01, "momentum": 1.0},
    "dampening_one": {"lr": 0.05, "momentum": 0.9, "dampening": 1.0},
    "weight_decay_one": {"lr": 0.02, "momentum": 0.5, "weight_decay": 1.0},
}
ADAM_BOUNDARIES: dict[str, dict[str, Any]] = {
    "betas_zero": {"lr": 1e-2, "betas": [0.0, 0.0]},
    "weight_decay_one": {"lr": 1e-2, "weight_decay": 1.0},
    "eps_zero": {"lr": 1e-2, "betas": [0.5, 0.9], "eps": 0.0},
}
BOUNDARY_STEPS = 3  # the momentum buffer's update first shows at step 2
BOUNDARY_SHAPES = [[6, 4], [4]]
# Gradients scaled down per config, so that where eps enters the update shows.
GRAD_SCALES = {"small_grads": 1e-4}
SGD_VALIDATION: list[tuple[dict[str, Any], bool]] = [
    ({"lr": -0.1}, True),
    ({"lr": 0.1, "momentum": -0.5}, True),
    ({"lr": 0.1, "weight_decay": -1e-3}, True),
    ({"lr": 0.1, "nesterov": True}, True),
    ({"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "nesterov": True}, True),
    ({"lr": 0.0}, False),
    ({"lr": 0.1, "momentum": 0.9, "nesterov": True}, False),
    ({"lr": 0.1, "momentum": 0.9, "dampening": 0.5}, False),
]
ADAM_VALIDATION: list[tuple[dict[str, Any], bool]] = [
    ({"lr": -1e-3}, True),
    ({"eps": -1e-8}, True),
    ({"betas": [1.0, 0.999]}, True),
    ({"betas": [-0.1, 0.999]}, True),
    ({"betas": [0.9, 1.0]}, True),
    ({"weight_decay": -0.1}, True),
    ({"lr": 0.0}, False),
    ({"betas": [0.0, 0.0], "eps": 0.0}, False),
]


def _optimizer_cases(cls: str, configs: dict[str, dict[str, Any]],
                     boundaries: dict[str, dict[str, Any]],
                     validation: list[tuple[dict[str, Any], bool]]) -> list[Case]:
    cases: list[Case] = []
    for name, config in configs.items():
        cases.append({
            "probe": "trajectory", "class": cls, "id": f"trajectory.{name}", "seed": 31,
            "dtype": "float64" if name.startswith("float64") else "float32",
            "iterable": "generator" if name in ("plain", "default") else "list",
            # The config with parameters without a gradient (at steps 3 and 4) needs 6 steps.
            "shapes": SHAPES, "steps": 6 if name == "skips_missing" else STEPS,
            "config": config,
            # Parameters without a gradient at some steps: a config of its own (see below).
            "none_grads": [[1, 2], [1, 3]] if name == "skips_missing" else [],
            "zero_grads": [[0, 4]] if name == "weight_decay" else [],
            **({"grad_scale": GRAD_SCALES[name]} if name in GRAD_SCALES else {}),
        })
    for name, config in boundaries.items():
        cases.append({"probe": "trajectory", "class": cls, "id": f"trajectory.boundaries.{name}",
                      "seed": 37, "dtype": "float32", "iterable": "list",
                      "shapes": BOUNDARY_SHAPES, "steps": BOUNDARY_STEPS, "config": config,
                      "none_grads": [], "zero_grads": []})
    for index, (config, invalid) in enumerate(validation):
        cases.append({"probe": "validation", "class": cls, "id": f"validation.{index}",
                      "seed": 5, "dtype": "float32", "shapes": [[2]], "config": config,
                      "invalid": invalid})
    cases.append({"probe": "optimizer_zero_grad", "class": cls, "id": "zero_grad", "seed": 7,
                  "dtype": "float32", "shapes": [[3, 2], [4]],
                  "config": {"lr": 0.1}})
    return cases


@cache
def _lab_cases(function: str) -> tuple[Case, ...]:
    return tuple({
        "zero_grad": _zero_grad_cases,
        "sgd_step": _sgd_step_cases,
        "SGD": lambda: _optimizer_cases("SGD", SGD_CONFIGS, SGD_BOUNDARIES, SGD_VALIDATION),
        "Adam": lambda: _optimizer_cases("Adam", ADAM_CONFIGS, ADAM_BOUNDARIES,
                                         ADAM_VALIDATION),
    }[function]())


def lab_cases(function: str) -> list[Case]:
    """The cases of one function (fixed and seeded, so built once per process)."""
    return list(_lab_cases(function))


SIGNATURES: dict[str, tuple[str, list[tuple[str, str | None]], tuple[str, ...]]] = {
    "zero_grad": ("function", [("params", None), ("set_to_none", "False")], ()),
    "sgd_step": ("function", [("params", None), ("lr", None)], ()),
    "SGD": ("class", [("params", None), ("lr", None), ("momentum", "0.0"),
                      ("dampening", "0.0"), ("weight_decay", "0.0"), ("nesterov", "False"),
                      ("maximize", "False")], ("step", "zero_grad")),
    "Adam": ("class", [("params", None), ("lr", "0.001"), ("betas", "(0.9, 0.999)"),
                       ("eps", "1e-08"), ("weight_decay", "0.0")], ("step", "zero_grad")),
}
