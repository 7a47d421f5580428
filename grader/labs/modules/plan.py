"""Lab modules' plan: its functions, the cases each is graded on, and their signatures.

What the child-side probes may import (they run beside student code, which must never reach a
judge or a reference): which inputs, as data; inputs.py builds the modules and tensors.
"""

from __future__ import annotations

from functools import cache

from grader.labs.modules.inputs import WIDE, Case

# The lab's functions, in the order students meet them: the one statement of them (the
# probes' FUNCTIONS and the judge's Lab.functions are this tuple).
FUNCTIONS = ("load_state_", "tie_weights_", "ema_update_model_", "batchnorm_update_")


@cache
def _lab_cases(function: str) -> tuple[Case, ...]:
    if function == "load_state_":
        return (
            {"id": "same_dtype", "dtype": "float32", "source_dtype": "float32", "seed": 10},
            {"id": "float64", "dtype": "float64", "source_dtype": "float64", "seed": 11},
            {"id": "cast", "dtype": "float32", "source_dtype": "float64", "seed": 12},
            # A checkpoint read on the CPU, loaded into a module on the device graded.
            {"id": "from_cpu", "dtype": "float32", "source_dtype": "float32", "seed": 16,
             "source_device": "cpu"},
            {"id": "missing_key", "dtype": "float32", "source_dtype": "float32", "seed": 13,
             "problem": "missing", "key": "0.bias"},
            {"id": "unexpected_key", "dtype": "float32", "source_dtype": "float32",
             "seed": 14, "problem": "unexpected", "key": "3.weight"},
            {"id": "wrong_shape", "dtype": "float32", "source_dtype": "float32", "seed": 15,
             "problem": "shape", "key": "2.weight"},
        )
    if function == "tie_weights_":
        return (
            {"id": "float32", "dtype": "float32", "vocab": 10, "dim": 4, "seed": 20},
            {"id": "float64", "dtype": "float64", "vocab": 7, "dim": 3, "seed": 21},
        )
    if function == "ema_update_model_":
        return (
            {"id": "decay_0.9", "dtype": "float32", "decay": 0.9, "seed": 30},
            {"id": "decay_0.999", "dtype": "float64", "decay": 0.999, "seed": 31},
            {"id": "decay_0", "dtype": "float32", "decay": 0.0, "seed": 32},
            {"id": "allocation", "dtype": "float32", "decay": 0.9, "seed": 33,
             "measure": "allocation", "width": WIDE},
        )
    return (  # batchnorm_update_
        {"id": "default_momentum", "dtype": "float32", "shape": [8, 5], "steps": 3, "seed": 40},
        {"id": "momentum_0.3", "dtype": "float32", "shape": [8, 5], "steps": 3, "seed": 41,
         "momentum": 0.3},
        {"id": "cumulative", "dtype": "float64", "shape": [6, 5], "steps": 4, "seed": 42,
         "momentum": None},
        {"id": "sequence", "dtype": "float32", "shape": [4, 5, 7], "steps": 2, "seed": 43,
         "momentum": 0.1},
        {"id": "batch_requires_grad", "dtype": "float64", "shape": [8, 5], "steps": 2,
         "seed": 44, "momentum": 0.1, "requires_grad": True},
    )


def lab_cases(function: str) -> list[Case]:
    return list(_lab_cases(function))


SIGNATURES: dict[str, list[tuple[str, str | None]]] = {
    "load_state_": [("module", None), ("state_dict", None)],
    "tie_weights_": [("decoder", None), ("embedding", None)],
    "ema_update_model_": [("ema", None), ("model", None), ("decay", None)],
    "batchnorm_update_": [("running_mean", None), ("running_var", None),
                          ("num_batches_tracked", None), ("batch", None), ("momentum", "0.1")],
}
