"""The records of lab tensor_ops' probes (probes.py writes them, judge.py reads them)."""

from __future__ import annotations

from typing import Any

import torch
from pydantic import TypeAdapter, with_config
from typing_extensions import TypedDict

from grader.labs.records import (
    STRICT,
    CaseType,
    ErrorRecord,
    Failed,
    MeteredAllocationRecord,
    Tensor,
    TensorState,
    first_complaint,
    tensor_is,
)
from grader.labs.tensor_ops.inputs import LAYOUTS, view_of


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


@with_config(STRICT)
class AutogradRecord(TypedDict):
    error: ErrorRecord | None
    returned_is_x: bool
    backward_error: ErrorRecord | None
    grad: Tensor | None
    other_grad: Tensor | None
    forward_error: ErrorRecord | None
    tangent: Tensor | None


_BY_MEASURE: dict[str, TypeAdapter[Any]] = {
    "state": TypeAdapter(Failed | StateRecord),
    "allocation": TypeAdapter(Failed | MeteredAllocationRecord),
    "rejects": TypeAdapter(Failed | RejectsRecord),
    "autograd": TypeAdapter(Failed | AutogradRecord),
}


def record_type(function: str, case: dict[str, Any]) -> CaseType:
    """The type of the record `function`'s probe writes for `case`, with what the case fixes
    of a state record: the probe's own copies, of the argument taken before the call and of
    its base (the witness's memory) after it, of the case's shapes and dtype."""
    adapter = _BY_MEASURE[case["measure"]]
    # An autograd record's gradient and tangent are read from tensors the function may reshape
    # (`x.t_()`): their shape is the student's, judged by `mismatch`, not fixed by the case.
    if case["measure"] != "state" or "layout" not in case or "dtype" not in case:
        return CaseType(adapter, lambda record: None)  # a case that fixes nothing of it

    def fits(record: dict[str, Any]) -> str | None:
        base = torch.empty(case.get("base_shape") or LAYOUTS[case["layout"]], device="meta")
        view = view_of(base, case["layout"])
        return first_complaint(
            tensor_is("alias_values", record["alias_values"], list(view.shape), case["dtype"]),
            tensor_is("base_values", record["base_values"], list(base.shape), case["dtype"]))

    return CaseType(adapter, fits)
