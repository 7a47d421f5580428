"""The records of lab optim's probes (probes.py writes them, judge.py reads them)."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, with_config
from typing_extensions import Required, TypedDict

from grader.labs.records import (
    STRICT,
    ErrorRecord,
    Failed,
    MeteredAllocationRecord,
    Tensor,
    TensorState,
)


@with_config(STRICT)
class ZeroGradParam(TypedDict):
    grad_is_none: bool
    same_object: bool
    state_before: TensorState | None
    state_after: TensorState | None
    grad_values: Tensor | None
    alias_values: Tensor | None
    param_unchanged: bool


@with_config(STRICT)
class ZeroGradRecord(TypedDict):
    error: ErrorRecord | None
    params: list[ZeroGradParam]


@with_config(STRICT)
class SgdStepParam(TypedDict):
    state_before: TensorState
    state_after: TensorState
    values: Tensor
    alias_values: Tensor
    grad_untouched: bool


@with_config(STRICT)
class SgdStepRecord(TypedDict):
    error: ErrorRecord | None
    params: list[SgdStepParam]


@with_config(STRICT)
class StateEntry(TypedDict):
    """A state tensor of the optimizer, judged from the step torch keeps it from."""

    same_object: bool
    same_ptr: bool


@with_config(STRICT)
class OptimizerState(TypedDict, total=False):
    """What probes.py _optimizer_state found in `optimizer.state[p]`: `missing` always;
    each state key of the class (None where the entry is not a tensor), and `step`."""

    missing: Required[bool]
    momentum_buffer: StateEntry | None
    exp_avg: StateEntry | None
    exp_avg_sq: StateEntry | None
    step: float | None


@with_config(STRICT)
class StepParam(TypedDict):
    values: Tensor
    state_before: TensorState
    state_after: TensorState
    had_grad: bool
    grad_untouched: bool
    state: OptimizerState


@with_config(STRICT)
class StepRecord(TypedDict):
    params: list[StepParam]
    error: ErrorRecord | None


@with_config(STRICT)
class TrajectoryRecord(TypedDict):
    error: ErrorRecord | None
    steps: list[StepRecord]


@with_config(STRICT)
class ValidationRecord(TypedDict):
    error: None
    raised: ErrorRecord | None


@with_config(STRICT)
class OptimizerZeroGradRecord(TypedDict):
    error: ErrorRecord | None
    default_all_none: bool
    kept_and_zeroed: bool


_BY_PROBE: dict[str, TypeAdapter[Any]] = {
    "zero_grad": TypeAdapter(Failed | ZeroGradRecord),
    "sgd_step": TypeAdapter(Failed | SgdStepRecord),
    "sgd_step.allocation": TypeAdapter(Failed | MeteredAllocationRecord),
    "trajectory": TypeAdapter(Failed | TrajectoryRecord),
    "validation": TypeAdapter(Failed | ValidationRecord),
    "optimizer_zero_grad": TypeAdapter(Failed | OptimizerZeroGradRecord),
}


def record_type(function: str, case: dict[str, Any]) -> TypeAdapter[Any]:
    """The type of the record `function`'s probe writes for `case`."""
    if case["probe"] == "sgd_step" and case.get("measure") == "allocation":
        return _BY_PROBE["sgd_step.allocation"]
    return _BY_PROBE[case["probe"]]
