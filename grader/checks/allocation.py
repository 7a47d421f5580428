"""Allocation: find full-size temporaries, naming the aten op that created each one.

Child side: `AllocationTracker`, a dispatch mode that sees every aten op below autograd and
records each output whose storage is not one of the op's inputs (a new allocation). Judge side:
`full_size_temporaries` keeps those at least half as large as the tensor being updated (SPEC: no
temporary the size of the input; a reduction-sized one is fine; a bool mask is half-size in
numel terms and counts, by policy). Measure versions in a separate call: under a dispatch mode
`_foreach_add_` does not advance the version counter (torch-facts §9).
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

FULL_SIZE_FRACTION = 0.5


class AllocationTracker(TorchDispatchMode):
    """Records `{op, numel, nbytes, dtype, shape}` for every new storage an aten op creates."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[dict[str, Any]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        inputs = {
            t.untyped_storage()._cdata
            for t in tree_leaves((args, kwargs))
            if isinstance(t, torch.Tensor)
        }
        out = func(*args, **kwargs)
        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            if storage._cdata in inputs or storage.nbytes() == 0:
                continue
            self.events.append(
                {
                    "op": _op_name(func),
                    "numel": storage.nbytes() // max(t.element_size(), 1),
                    "nbytes": storage.nbytes(),
                    "dtype": str(t.dtype).removeprefix("torch."),
                    "shape": list(t.shape),
                }
            )
        return out


class HostMemoryMeter:
    """Peak Python-heap bytes (tracemalloc) during a call: sees numpy detours, which neither
    the dispatch mode nor the profiler can (torch-facts §2); torch's own allocations are not
    counted here, so the two meters do not overlap."""

    def __enter__(self) -> HostMemoryMeter:
        self.peak_bytes = 0
        self._was_tracing = tracemalloc.is_tracing()
        if not self._was_tracing:
            tracemalloc.start()
        tracemalloc.reset_peak()
        self._base = tracemalloc.get_traced_memory()[0]
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.peak_bytes = max(0, tracemalloc.get_traced_memory()[1] - self._base)
        if not self._was_tracing:
            tracemalloc.stop()


def _op_name(func: Any) -> str:
    schema = getattr(func, "_schema", None)
    return schema.name if schema is not None else str(func)


def full_size_temporaries(events: list[dict[str, Any]], *, numel: int) -> list[dict[str, Any]]:
    """The recorded allocations with at least half as many elements as the updated tensor."""
    if numel == 0:
        return []
    return [e for e in events if e["numel"] >= FULL_SIZE_FRACTION * numel]


def host_temporary(peak_bytes: int, *, nbytes: int) -> bool:
    """A Python-heap peak at least half the size of the updated tensor (a numpy copy)."""
    return nbytes > 0 and peak_bytes >= FULL_SIZE_FRACTION * nbytes


def describe_bytes(nbytes: int) -> str:
    """'4.0 MB', '512 B': sizes as a student reads them."""
    size = float(nbytes)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"
