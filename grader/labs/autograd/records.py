"""The records of lab autograd's probes (probes.py writes them, judge.py reads them). Keys a
probe writes only once the call got that far are NotRequired: a judge reads them after
checking what came before (an error, the kind of result)."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, with_config
from typing_extensions import NotRequired, TypedDict

from grader.labs.autograd.inputs import build_start
from grader.labs.records import (
    STRICT,
    AllocationRecord,
    CaseType,
    ErrorRecord,
    Failed,
    Tensor,
    TensorState,
    tensor_is,
)


@with_config(STRICT)
class UpdateLeafRecord(TypedDict):
    error: ErrorRecord | None
    returned_is_leaf: bool
    state_before: TensorState
    state_after: TensorState
    values: Tensor
    alias_values: Tensor
    grad_kept: bool


@with_config(STRICT)
class AddOrCopyUnpaired(TypedDict):
    """add_or_copy raised, or returned something that is not a pair."""

    error: ErrorRecord | None
    t_untouched: bool
    t_version: int
    t_version_advanced: bool
    shape_of_return: NotRequired[str]


@with_config(STRICT)
class AddOrCopyPaired(TypedDict):
    """add_or_copy returned a pair (result, flag): what it was, and what it did."""

    error: None
    t_untouched: bool
    t_version: int
    t_version_advanced: bool
    return_kind: str
    flag: bool | str
    result_is_t: bool
    result_is_tensor: bool
    result_values: NotRequired[Tensor]
    backward_error: NotRequired[ErrorRecord | None]
    leaf_grad: NotRequired[Tensor | None]


@with_config(STRICT)
class BlockRecord(TypedDict):
    error: ErrorRecord | None
    value_type: NotRequired[str]
    value: NotRequired[Tensor]
    backward_error: NotRequired[ErrorRecord | None]
    x_grad: NotRequired[Tensor | None]
    w_grad: NotRequired[Tensor | None]
    inputs_untouched: bool


@with_config(STRICT)
class GradcheckRecord(TypedDict):
    error: None
    gradcheck: bool
    gradcheck_error: ErrorRecord | None


@with_config(STRICT)
class SnapshotRecord(TypedDict):
    error: ErrorRecord | None
    t_untouched: bool
    result_type: NotRequired[str]
    values: NotRequired[Tensor]
    shares_storage: NotRequired[bool]
    state: NotRequired[TensorState]
    sees_later_writes: NotRequired[bool]


@with_config(STRICT)
class AliasRecord(TypedDict):
    error: ErrorRecord | None
    t_untouched: bool
    result_type: NotRequired[str]
    values: NotRequired[Tensor]
    same_ptr: NotRequired[bool]
    state: NotRequired[TensorState]
    shares_version: NotRequired[bool]


_TYPES: dict[str, TypeAdapter[Any]] = {
    "update_leaf_": TypeAdapter(Failed | UpdateLeafRecord),
    "add_or_copy": TypeAdapter(Failed | AddOrCopyUnpaired | AddOrCopyPaired),
    "fixed_block": TypeAdapter(Failed | BlockRecord),
    "fixed_block.allocation": TypeAdapter(Failed | AllocationRecord),
    "fixed_block.gradcheck": TypeAdapter(Failed | GradcheckRecord),
    "snapshot": TypeAdapter(Failed | SnapshotRecord),
    "alias": TypeAdapter(Failed | AliasRecord),
}


def record_type(function: str, case: dict[str, Any]) -> CaseType:
    """The type of the record `function`'s probe writes for `case`, with what the case fixes
    of it: update_leaf_'s copy of the leaf taken before the call (its shape and dtype), and
    the size of fixed_block's `x @ w`."""
    measure = case.get("measure", "state")
    adapter = _TYPES[function if measure == "state" else f"{function}.{measure}"]
    if function == "update_leaf_":
        def fits(record: dict[str, Any]) -> str | None:
            start = build_start(case, "meta")[0]
            return tensor_is("alias_values", record["alias_values"], list(start.shape),
                             case["dtype"])

        return CaseType(adapter, fits)
    if function == "fixed_block" and measure == "allocation":
        numel = case["x_shape"][0] * case["w_shape"][1]
        return CaseType(adapter, lambda record: None if record["numel"] == numel else (
            f"numel: {record['numel']}, the case's is {numel}"))
    return CaseType(adapter, lambda record: None)
