"""The records of lab tensor_ops' probes (probes.py writes them, judge.py reads them)."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, with_config
from typing_extensions import TypedDict

from grader.labs.records import (
    STRICT,
    ErrorRecord,
    Failed,
    MeteredAllocationRecord,
    Tensor,
    TensorState,
)


@with_config(STRICT)
class StateRecord(TypedDict):
    error: ErrorRecord | None
    returned_is_x: bool
    returned_type: str
    returned_dtype: str
    state_before: TensorState
    state_after: TensorState
    values: Tensor
    alias_values: Tensor
    base_values: Tensor
    other_untouched: bool


@with_config(STRICT)
class RejectsRecord(TypedDict):
    error: None
    raised: ErrorRecord | None
    untouched: bool


_BY_MEASURE: dict[str, TypeAdapter[Any]] = {
    "state": TypeAdapter(Failed | StateRecord),
    "allocation": TypeAdapter(Failed | MeteredAllocationRecord),
    "rejects": TypeAdapter(Failed | RejectsRecord),
}


def record_type(function: str, case: dict[str, Any]) -> TypeAdapter[Any]:
    """The type of the record `function`'s probe writes for `case`."""
    return _BY_MEASURE[case["measure"]]
