"""The records of lab modules' probes (probes.py writes them, judge.py reads them). Keys a probe
writes only once the call got that far are NotRequired."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, with_config
from typing_extensions import NotRequired, TypedDict

from grader.labs.modules.inputs import MLP_KEYS, MLP_SHAPES
from grader.labs.records import (
    STRICT,
    AllocationEvent,
    CaseType,
    ErrorRecord,
    Failed,
    Tensor,
    TensorState,
    count_is,
    first_complaint,
    tensor_is,
)


@with_config(STRICT)
class LoadStateRecord(TypedDict):
    error: ErrorRecord | None
    returned_is_module: bool
    state_before: list[TensorState]
    values_before: list[Tensor]
    kept: list[bool]
    state_after: list[TensorState]
    values_after: list[Tensor]
    optimizer_trains: NotRequired[bool]


@with_config(STRICT)
class TieRecord(TypedDict):
    error: ErrorRecord | None
    returned_is_decoder: bool
    decoder_has_embedding_weight: NotRequired[bool]
    embedding_kept: NotRequired[bool]
    bias_kept: NotRequired[bool]
    listed: NotRequired[int]
    listed_over_weight: NotRequired[int]


@with_config(STRICT)
class EmaRecord(TypedDict):
    error: ErrorRecord | None
    returned_is_ema: bool
    state_before: list[TensorState]
    kept: list[bool]
    state_after: list[TensorState]
    values_after: list[Tensor]
    source_untouched: bool


@with_config(STRICT)
class EmaAllocationRecord(TypedDict):
    error: ErrorRecord | None
    allocations: list[AllocationEvent]
    numel: int
    nbytes: int


@with_config(STRICT)
class BatchnormRecord(TypedDict):
    error: ErrorRecord | None
    returned_none: bool
    state_before: list[TensorState]
    state_after: list[TensorState]
    values_after: list[Tensor]


_TYPES: dict[str, TypeAdapter[Any]] = {
    "load_state_": TypeAdapter(Failed | LoadStateRecord),
    "tie_weights_": TypeAdapter(Failed | TieRecord),
    "ema_update_model_": TypeAdapter(Failed | EmaRecord),
    "ema_update_model_.allocation": TypeAdapter(Failed | EmaAllocationRecord),
    "batchnorm_update_": TypeAdapter(Failed | BatchnormRecord),
}
_INTEGER = {"1.num_batches_tracked"}


def _mlp_fits(record: dict[str, Any], case: dict[str, Any]) -> str | None:
    """One entry per state-dict key of the mlp, each value of its key's shape and dtype."""
    lists = ("kept", "state_before", "state_after", "values_after", "values_before")
    counted = [count_is(key, record[key], len(MLP_KEYS)) for key in lists if key in record]
    values = [tensor_is(f"values_after[{key}]", value, MLP_SHAPES[key],
                        "int64" if key in _INTEGER else case["dtype"])
              for key, value in zip(MLP_KEYS, record["values_after"], strict=False)]
    return first_complaint(*counted, *values)


def record_type(function: str, case: dict[str, Any]) -> CaseType:
    """The type of the record `function`'s probe writes for `case`, with what the case fixes
    of it: the mlp's entries (load_state_, ema_update_model_), the three statistics."""
    if case.get("measure") == "allocation":
        numel = case["width"] ** 2
        return CaseType(_TYPES[f"{function}.allocation"], lambda record: None
                        if record["numel"] == numel else f"numel: the case's is {numel}")
    adapter = _TYPES[function]
    if function in ("load_state_", "ema_update_model_"):
        return CaseType(adapter, lambda record: _mlp_fits(record, case))
    if function == "batchnorm_update_":
        channels = case["shape"][1]

        def fits(record: dict[str, Any]) -> str | None:
            return first_complaint(
                count_is("state_before", record["state_before"], 3),
                count_is("state_after", record["state_after"], 3),
                count_is("values_after", record["values_after"], 3),
                *(tensor_is(f"values_after[{n}]", v, shape, dtype) for n, (v, shape, dtype)
                  in enumerate(zip(record["values_after"],
                                   ([channels], [channels], []),
                                   (case["dtype"], case["dtype"], "int64"), strict=False))))

        return CaseType(adapter, fits)
    return CaseType(adapter, lambda record: None)
