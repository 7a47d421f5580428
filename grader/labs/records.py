"""What a probe records about one case, as types shared by the child's probes and the judges.

A record crosses the trust boundary: the child that wrote it ran student code. So the grading
process checks each record against its type before any judge reads it (`checked`): a record of
the wrong shape is the child's runtime failure, and a judge that still raises on a checked
record is the grader's own bug (an internal error, exit 3), never a message to the student.

Each lab's `records.py` declares its probes' records with the pieces below; `Failed` is what a
case whose function is missing, or whose call raised before anything else was recorded, holds.
"""

from __future__ import annotations

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


Tensor = torch.Tensor


class MalformedRecord(ValueError):
    """A record the child wrote that is not of its probe's type."""


def checked(adapter: TypeAdapter[Any], record: object) -> dict[str, Any]:
    """`record` if it is of the adapter's type (tensors are kept, not copied), else
    MalformedRecord with pydantic's first complaint."""
    try:
        adapter.validate_python(record)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise MalformedRecord(f"{where}: {first['msg']}") from None
    assert isinstance(record, dict)
    return record
