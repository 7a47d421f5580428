"""The records of lab optim's probes (probes.py writes them, judge.py reads them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter, with_config
from typing_extensions import Required, TypedDict

from grader.labs.records import (
    STRICT,
    CaseType,
    ErrorRecord,
    Failed,
    Fits,
    MeteredAllocationRecord,
    Tensor,
    TensorState,
    count_is,
    first_complaint,
    tensor_is,
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


def record_type(function: str, case: dict[str, Any]) -> CaseType:
    """The type of the record `function`'s probe writes for `case`, with what the case fixes
    of it: one entry per parameter (and per step, at most the case's steps), and the copies
    the probe took before the call, of the parameter's shape and dtype."""
    if case["probe"] == "sgd_step" and case.get("measure") == "allocation":
        return CaseType(_BY_PROBE["sgd_step.allocation"], lambda record: None)
    return CaseType(_BY_PROBE[case["probe"]], _FITS.get(case["probe"], _nothing)(case))


def _nothing(case: dict[str, Any]) -> Fits:
    return lambda record: None


def _zero_grad_fits(case: dict[str, Any]) -> Fits:
    shapes, kinds, dtype = case["shapes"], case["grads"], case.get("dtype")

    def fits(record: dict[str, Any]) -> str | None:
        params = record["params"]
        return first_complaint(count_is("params", params, len(shapes)), *(
            _grad_copy(f"params.{index}", param, shape, kind, dtype)
            for index, (param, shape, kind) in enumerate(zip(params, shapes, kinds, strict=False))))

    return fits


def _grad_copy(where: str, param: dict[str, Any], shape: list[int], kind: str,
               dtype: str | None) -> str | None:
    """The gradient as the probe found it before the call: none for a `none` one."""
    if kind == "none":
        return None if param["alias_values"] is None and param["state_before"] is None else (
            f"{where}: a gradient where the case has none")
    if param["alias_values"] is None or param["state_before"] is None:
        return f"{where}: no gradient where the case has one"
    return tensor_is(f"{where}.alias_values", param["alias_values"], shape, dtype)


def _sgd_step_fits(case: dict[str, Any]) -> Fits:
    shapes, dtype = case["shapes"], case.get("dtype")

    def fits(record: dict[str, Any]) -> str | None:
        params = record["params"]
        return first_complaint(count_is("params", params, len(shapes)), *(
            tensor_is(f"params.{index}.alias_values", param["alias_values"], shape, dtype)
            for index, (param, shape) in enumerate(zip(params, shapes, strict=False))))

    return fits


def _trajectory_fits(case: dict[str, Any]) -> Fits:
    shapes, steps, missing = case["shapes"], case["steps"], case.get("none_grads", [])

    def fits(record: dict[str, Any]) -> str | None:
        recorded = record["steps"]
        if len(recorded) > steps:
            return f"steps: {len(recorded)} entries, the case has {steps}"
        if any(step["error"] is not None for step in recorded[:-1]):
            return "steps: a step recorded after one that raised"
        for number, step in enumerate(recorded):
            complaint = count_is(f"steps.{number}.params", step["params"], len(shapes))
            if complaint is not None:
                return complaint
            for index, param in enumerate(step["params"]):
                if param["had_grad"] == ([index, number] in missing):
                    return f"steps.{number}.params.{index}.had_grad: not the case's schedule"
        return None

    return fits


_FITS: dict[str, Callable[[dict[str, Any]], Fits]] = {
    "zero_grad": _zero_grad_fits,
    "sgd_step": _sgd_step_fits,
    "trajectory": _trajectory_fits,
}
