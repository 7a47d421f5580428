"""What a probe records about one case, as types shared by the child's probes and the judges.

A record crosses the trust boundary: the child that wrote it ran student code. So the grading
process checks each record against its type before any judge reads it (`checked`): a record of
the wrong shape is the child's runtime failure, and a judge that still raises on a checked
record is the grader's own bug (an internal error, exit 3), never a message to the student.
The type is also checked against the case that produced the record (`CaseType`): the counts
and shapes the case fixes whatever the submission does (one entry per parameter, the shape of
a copy the probe took before the call), since a record of the right types can still carry one
parameter too many (issue 26).

Each lab's `records.py` declares its probes' records with the pieces below; `Failed` is what a
case whose function is missing, or whose call raised before anything else was recorded, holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from pydantic import ConfigDict, TypeAdapter, ValidationError, with_config
from typing_extensions import NotRequired, TypedDict

STRICT = ConfigDict(arbitrary_types_allowed=True, extra="forbid", strict=True)


@with_config(STRICT)
class ErrorRecord(TypedDict):
    """An exception raised by student code, as data (sandbox/child.py describe_exception)."""

    type: str
    bases: list[str]
    message: str
    location: NotRequired[str]
    line: NotRequired[int | None]  # in the submission's source
    code: NotRequired[str]  # that line
    module: NotRequired[str]  # an ImportError's missing module
    traceback: NotRequired[str]


@with_config(STRICT)
class TensorState(TypedDict):
    """Pointer, version and autograd status of a tensor (checks/tensors.py state)."""

    ptr: int
    version: int
    is_leaf: bool
    requires_grad: bool
    grad_fn: str | None
    exact_type: bool


@with_config(STRICT)
class Failed(TypedDict):
    """Nothing but the exception: the function is missing, or raised before anything else."""

    error: ErrorRecord


@with_config(STRICT)
class AllocationEvent(TypedDict):
    """One allocation (or full-size write into memory no argument owns) the dispatch
    tracker saw (checks/allocation.py)."""

    op: str
    numel: int
    nbytes: int
    dtype: str
    shape: list[int]
    reused: NotRequired[bool]


@with_config(STRICT)
class AllocationRecord(TypedDict):
    """The dispatch tracker's events for one call (the only meter some probes run)."""

    error: ErrorRecord | None
    allocations: list[AllocationEvent]
    numel: int


@with_config(STRICT)
class MeteredAllocationRecord(TypedDict):
    """Every allocation meter's reading for one call (checks/allocation.py
    judge_allocations reads them all)."""

    error: ErrorRecord | None
    allocations: list[AllocationEvent]
    numel: int
    nbytes: int
    host_peak_bytes: int
    profiler_peak_bytes: int
    profiler_peak_op: str | None
    cuda_peak_bytes: NotRequired[int]
    # The call measured from outside (outside_meter.py), made with no in-process meter on;
    # the grading process adds what the zygote read for it, `outside_peak_bytes`,
    # which a record of the child's own may not hold.
    outside_windows: NotRequired[list[int]]


Tensor = torch.Tensor


class MalformedRecord(ValueError):
    """A record the child wrote that is not of its probe's type."""


Fits = Callable[[dict[str, Any]], str | None]


@dataclass(frozen=True)
class CaseType:
    """A record's type with what its case fixes of it: `fits` names, for a record of the type
    that is not a `Failed` one, the first thing that does not match the case, or None."""

    adapter: TypeAdapter[Any]
    fits: Fits

    def validate_python(self, record: object) -> object:
        return self.adapter.validate_python(record)


def checked(adapter: TypeAdapter[Any] | CaseType, record: object) -> dict[str, Any]:
    """`record` if it is of the adapter's type (tensors are kept, not copied), and of its
    case where the adapter is a CaseType; else MalformedRecord with the first complaint."""
    try:
        adapter.validate_python(record)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise MalformedRecord(f"{where}: {first['msg']}") from None
    if not isinstance(record, dict):
        raise MalformedRecord("not a mapping")
    if isinstance(adapter, CaseType) and set(record) != {"error"}:  # Failed: nothing to fit
        complaint = adapter.fits(record)
        if complaint is not None:
            raise MalformedRecord(f"not of its case: {complaint}")
    return record


def dtype_name(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def count_is(where: str, items: Sequence[Any], count: int) -> str | None:
    """None if `items` has `count` entries, else what is wrong (for `fits`)."""
    return None if len(items) == count else f"{where}: {len(items)} entries, the case has {count}"


def tensor_is(where: str, t: object, shape: Sequence[int], dtype: str | None = None
              ) -> str | None:
    """None if `t` is a tensor of `shape` (and `dtype`), else what is wrong (for `fits`)."""
    if not isinstance(t, torch.Tensor):
        return f"{where}: not a tensor"
    if list(t.shape) != list(shape):
        return f"{where}: shape {list(t.shape)}, the case's is {list(shape)}"
    if dtype is not None and dtype_name(t) != dtype:
        return f"{where}: {dtype_name(t)}, the case's is {dtype}"
    return None


def first_complaint(*complaints: str | None) -> str | None:
    return next((c for c in complaints if c is not None), None)
