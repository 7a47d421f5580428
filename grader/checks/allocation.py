"""Allocation: find full-size temporaries, naming the aten op that created each one.

Child side: `AllocationTracker`, a dispatch mode that sees every aten op below autograd and
records each output whose storage is not one of the op's inputs (a new allocation). Judge side:
`full_size_temporaries` keeps those at least half as large as the tensor being updated (no
temporary the size of the input; a reduction-sized one is fine; a bool mask is half-size in
numel terms and counts, by policy: docs/semantics.md#allocation-budgets). Measure versions in a
separate call: under a dispatch mode `_foreach_add_` does not advance the version counter
(docs/semantics.md#version-counter).
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from grader.checks.findings import PASS, Finding, fail, phrase

FULL_SIZE_FRACTION = 0.5


class AllocationTracker(TorchDispatchMode):
    """Records `{op, numel, nbytes, dtype, shape}` for every new storage an aten op creates,
    and, given the call's `arguments`, for every write into memory that is neither theirs nor
    made during the call (`"reused": true`): a buffer kept at module level, or memory that no
    aten op allocated (mmap + torch.frombuffer), is a temporary however old it is."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """Leave `__torch_dispatch__` unwrapped: torch's default wraps it in
        `torch._dynamo.disable`, whose first call imports the compiler (torch._dynamo and
        torch._inductor), a cost to the zygote's start and memory that every fork then copies
        (docs/sandbox.md#numbers-behind-the-code). Submissions are graded eagerly;
        torch.compile is not part of these labs (under the sandbox it has no compiler to run)."""
        return False

    def __init__(self, arguments: Iterable[torch.Tensor | None] = ()) -> None:
        super().__init__()
        self.events: list[dict[str, Any]] = []
        self._watch_writes = bool(arguments)
        # Storages held (not only their addresses), so no address is reused during the call.
        held = [t.untyped_storage() for t in arguments if isinstance(t, torch.Tensor)]
        self._owned = {storage._cdata: storage for storage in held}

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
            self._owned[storage._cdata] = storage  # made during the call: counted once, here
            self.events.append(
                {
                    "op": _op_name(func),
                    "numel": storage.nbytes() // max(t.element_size(), 1),
                    "nbytes": storage.nbytes(),
                    "dtype": str(t.dtype).removeprefix("torch."),
                    "shape": list(t.shape),
                }
            )
        if self._watch_writes:
            self.events += [_event(func, t, reused=True) for t in _written(func, args, kwargs)
                            if t.untyped_storage()._cdata not in self._owned and t.numel()]
        return out


def _written(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    """The tensors an op writes into: its arguments marked `(a!)` in the schema (`out=` too)."""
    schema = getattr(func, "_schema", None)
    if schema is None:
        return []
    written: list[torch.Tensor] = []
    for index, argument in enumerate(schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = (args[index] if index < len(args) and not argument.kwarg_only
                 else kwargs.get(argument.name))
        written += [t for t in tree_leaves(value) if isinstance(t, torch.Tensor)]
    return written


def _event(func: Any, t: torch.Tensor, *, reused: bool) -> dict[str, Any]:
    return {"op": _op_name(func), "numel": t.numel(), "nbytes": t.numel() * t.element_size(),
            "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
            "reused": reused}


class HostMemoryMeter:
    """Peak Python-heap bytes (tracemalloc) during a call: sees numpy detours, which neither
    the dispatch mode nor the profiler can (docs/semantics.md#allocation-budgets); torch's own
    allocations are not counted here, so the two meters do not overlap."""

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


# Taken when the zygote imports this module, before any submission: a later rebinding of
# torch.autograd.profiler.profile changes nothing the meter calls (the class and its module
# are watched by sandbox/tamper.py).
_autograd_profile = torch.autograd.profiler.profile


class ProfilerMeter:
    """Peak bytes from the profiler's raw allocator events during a call, and the op that
    allocated at the peak. It sees memory allocated *inside* an op (logsumexp, median), which
    the dispatch mode cannot; `prof.events()` hides those, so the raw kineto records are read
    (docs/semantics.md#allocation-budgets). It is autograd's profiler, under
    `torch.profiler.profile`: that wrapper asks `hasattr(torch, "_inductor")`, which imports
    the compiler (a larger zygote for every fork to copy) to read one setting the meter does
    not need (docs/sandbox.md#numbers-behind-the-code)."""

    def __enter__(self) -> ProfilerMeter:
        self.peak_bytes = 0
        self.peak_op = ""
        self._profile = _autograd_profile(use_cpu=True, profile_memory=True,
                                                        use_kineto=True)
        self._profile.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._profile.__exit__(*exc_info)
        events = list(self._profile.kineto_results.events())  # type: ignore[union-attr]
        memory = sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns())
        ops = [e for e in events if e.name() != "[memory]"]
        current = 0
        for event in memory:
            current += event.nbytes()
            if current > self.peak_bytes:
                self.peak_bytes = current
                self.peak_op = _innermost_op(ops, event.start_ns())


def _innermost_op(ops: list[Any], when: int) -> str:
    around = [op for op in ops if op.start_ns() <= when <= op.start_ns() + op.duration_ns()]
    if not around:
        return ""
    inner = min(around, key=lambda op: op.duration_ns())
    outer = max(around, key=lambda op: op.duration_ns())
    return inner.name() if inner is outer else f"{inner.name()} (inside {outer.name()})"


def without_dispatch_mode(run: Callable[[], Any]) -> tuple[int, str, int]:
    """Run the call again with no dispatch mode on the stack, metered by the profiler and
    tracemalloc alone: (profiler peak, its op, host peak). Code that writes in place only
    while it sees the grader's dispatch mode (`torch._C._len_torch_dispatch_stack()`)
    allocates here, where the profiler still sees it."""
    with torch.no_grad(), HostMemoryMeter() as host, ProfilerMeter() as profiler:
        run()
    return profiler.peak_bytes, profiler.peak_op, host.peak_bytes


def warm_up_meters() -> None:
    """Pay the meters' one-time start-up once (in the zygote): tiny ops only, no CUDA."""
    with torch.no_grad(), ProfilerMeter(), AllocationTracker():
        torch.zeros(2).add_(torch.ones(2), alpha=-0.1)


def _op_name(func: Any) -> str:
    schema = getattr(func, "_schema", None)
    return schema.name if schema is not None else str(func)


def full_size_temporaries(events: list[dict[str, Any]], *, numel: int) -> list[dict[str, Any]]:
    """The recorded allocations with at least half as many elements as the updated tensor."""
    if numel == 0:
        return []
    return [e for e in events if e["numel"] >= FULL_SIZE_FRACTION * numel]


def over_budget(peak_bytes: int, *, nbytes: int) -> bool:
    """For byte meters (profiler, CUDA allocator, tracemalloc): more than a tenth of the
    tensor plus 4 KiB (docs/semantics.md#allocation-budgets). A float32 bool mask (a quarter of
    the bytes) is over, consistent with the tracker's element-count rule; reduction-sized
    buffers are not."""
    return nbytes > 0 and peak_bytes > 0.1 * nbytes + 4096


def judge_allocations(observed: dict[str, Any], *, function: str, tensor: str,
                      where: Any = "") -> Finding:
    """One verdict from the meters, each naming what it found.

    Dispatch tracker first (it names the aten op and dtype), then the profiler (allocations
    inside an op, and on CUDA the device allocator's peak), then the Python heap (numpy), all
    three inside the child; last the outside meter's peak for the same call made with none of
    them on (`outside_peak_bytes`, put there by the grading process: sandbox/outside_meter.py).
    """
    big = full_size_temporaries(observed["allocations"], numel=observed["numel"])
    reused = [event for event in big if event.get("reused")]
    if reused:
        first = reused[0]
        return fail("reused_buffer", function=function, op=first["op"],
                    size=describe_bytes(first["nbytes"]), tensor=tensor, where=where)
    if big:
        first = big[0]
        return fail("full_size_temporary", function=function, op=first["op"],
                    size=describe_bytes(first["nbytes"]), dtype=first["dtype"],
                    count=len(big), tensor=tensor, where=where,
                    temporaries=phrase("temporaries_one" if len(big) == 1 else "temporaries",
                                       count=len(big), op=first["op"]))
    nbytes = observed["nbytes"]
    profiler_peak = observed.get("profiler_peak_bytes", 0)
    if over_budget(profiler_peak, nbytes=nbytes):
        return fail("kernel_temporary", function=function, tensor=tensor, where=where,
                    op=observed.get("profiler_peak_op") or "?",
                    size=describe_bytes(profiler_peak))
    cuda_peak = observed.get("cuda_peak_bytes", 0)
    if over_budget(cuda_peak, nbytes=nbytes):
        return fail("kernel_temporary", function=function, tensor=tensor, where=where,
                    op="CUDA", size=describe_bytes(cuda_peak))
    if over_budget(observed["host_peak_bytes"], nbytes=nbytes):
        return fail("host_temporary", function=function, tensor=tensor,
                    size=describe_bytes(observed["host_peak_bytes"]))
    outside = observed.get("outside_peak_bytes")
    if outside is not None and full_size_peak(outside, nbytes=nbytes):
        # The meters in the process saw nothing where the one outside it saw a temporary:
        # the function allocates only where it cannot see itself metered.
        return fail("metered_differently", function=function, tensor=tensor, where=where,
                    size=describe_bytes(outside))
    return PASS


def full_size_peak(peak_bytes: int, *, nbytes: int) -> bool:
    """For the outside meter (a process's peak resident set, in pages): at least half the
    tensor's bytes above where the call began. Coarser than the byte meters, whose budget is
    a tenth: the interpreter's own allocations during a call move the resident set too."""
    return nbytes > 0 and peak_bytes >= FULL_SIZE_FRACTION * nbytes


def describe_bytes(nbytes: int) -> str:
    """'4.0 MB', '512 B': sizes as a student reads them."""
    size = float(nbytes)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"
