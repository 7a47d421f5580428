"""Child side of tensor_ops: call each function on each case and record what happened.

The members the sandbox calls are grader/sandbox/probes_contract.py's `LabProbes`.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

from grader.checks import tensors
from grader.checks.allocation import (
    AllocationTracker,
    HostMemoryMeter,
    ProfilerMeter,
    warm_up_meters,
    without_dispatch_mode,
)
from grader.checks.api import describe_module
from grader.labs.tensor_ops.inputs import (
    Case,
    build_args,
    build_base,
    build_other,
    loss_weights,
    view_of,
)
from grader.labs.tensor_ops.inputs import witnessed as witnessed
from grader.labs.tensor_ops.plan import FUNCTIONS as FUNCTIONS
from grader.labs.tensor_ops.plan import lab_cases
from grader.sandbox.child import call_student
from grader.sandbox.outside_meter import NO_METER, OutsideMeter
from grader.sandbox.probing import (
    backward,
    cuda_max_memory_allocated,
    cuda_memory_allocated,
    cuda_reset_peak_memory_stats,
    cuda_synchronize,
    enable_grad,
    forward_mode,
    no_grad,
    run_cases,
)
from grader.sandbox.witness import NO_ARENA, Arena


def warm_up() -> None:
    """Runs once in the zygote, so every child inherits it: the meters' one-time start-up, and
    every case's inputs drawn once (inputs.py caches them; a child copies instead of drawing)."""
    warm_up_meters()
    for function in FUNCTIONS:
        for case in lab_cases(function):
            build_base(case, "cpu")
            build_other(case, "cpu")


def describe_api(module: ModuleType) -> dict[str, Any]:
    return describe_module(module, FUNCTIONS)


def probe(module: ModuleType, function: str, *, device: str, cases: list[Case],
          arena: Arena = NO_ARENA, meter: OutsideMeter = NO_METER) -> dict[str, Any]:
    runners = {"allocation": probe_allocation, "rejects": probe_rejects, "state": probe_state,
               "autograd": probe_autograd}
    observed = run_cases(module, function, cases,
                         lambda target, case: runners[case["measure"]](target, case, device,
                                                                       arena, meter))
    return {"cases": observed}


def probe_state(function: Any, case: Case, device: str, arena: Arena,
                meter: OutsideMeter) -> dict[str, Any]:
    base = arena.share(case["id"], [build_base(case, device)])[0]  # read by the grader too
    x = view_of(base, case["layout"])
    other = build_other(case, device)
    other_values = None if other is None else tensors.values(other)
    other_version = None if other is None else tensors._version(other)
    alias = tensors._detach(x)
    before = tensors.state(x)
    returned, error = call_student(function, *build_args(case, x, other), **case.get("kwargs", {}))
    return {
        "error": error,
        "returned_is_x": returned is x,
        "returned_type": type(returned).__name__,
        "returned_dtype": str(returned.dtype).removeprefix("torch.")
        if isinstance(returned, torch.Tensor) else "",
        "state_before": before,
        "state_after": tensors.state(x),
        "values": tensors.values(x),
        "alias_values": tensors.values(alias),
        "base_values": tensors.values(base),
        "other_untouched": other is None or other_values is None or (
            tensors.same_values(other, other_values) and tensors._version(other) == other_version),
    }


def probe_allocation(function: Any, case: Case, device: str, arena: Arena,
                     meter: OutsideMeter) -> dict[str, Any]:
    """Allocations only (a fresh input, no other observation: the meters disturb versions).

    The call made again with no meter of this process on is measured from outside on the CPU
    (outside_meter.py): so every call on these large inputs is metered, by something the
    submission can see or by something it cannot."""
    if device != "cpu":
        meter = NO_METER  # the device's memory is not the process's resident set
    base = build_base(case, device)
    x = view_of(base, case["layout"])
    other = build_other(case, device)
    args = build_args(case, x, other)
    kwargs = case.get("kwargs", {})
    if case.get("meters") == "dispatch":
        # The dispatch tracker only: a dtype's own case, where what is sought is an aten op
        # (a `.float()` copy) that the tracker names; the float32 cases run every meter.
        with no_grad(), AllocationTracker([x, other]) as tracker:
            _, error = call_student(function, *args, **kwargs)
        return {"error": error, "allocations": tracker.events, "numel": x.numel(),
                "nbytes": x.numel() * x.element_size(), "host_peak_bytes": 0,
                "profiler_peak_bytes": 0, "profiler_peak_op": None, "cuda_peak_bytes": 0}
    cuda = device == "cuda"
    if cuda:
        cuda_synchronize()
        cuda_reset_peak_memory_stats()
        cuda_base = cuda_memory_allocated()
    with no_grad(), HostMemoryMeter() as host, ProfilerMeter() as profiler, \
                AllocationTracker([x, other]) as tracker:
        _, error = call_student(function, *args, **kwargs)
    cuda_peak = 0
    if cuda:
        cuda_synchronize()
        cuda_peak = cuda_max_memory_allocated() - cuda_base
    again = view_of(build_base(case, device), case["layout"])  # fresh, without the mode
    again_args = build_args(case, again, build_other(case, device))
    with no_grad():
        _, window, measured = meter.measure(lambda: call_student(function, *again_args, **kwargs))
    peak, peak_op, host_peak = 0, "", 0
    if not measured:  # nothing outside to ask: the profiler stands in, seen as it is
        again = view_of(build_base(case, device), case["layout"])
        again_args = build_args(case, again, build_other(case, device))
        peak, peak_op, host_peak = without_dispatch_mode(
            lambda: call_student(function, *again_args, **kwargs))
    return {"error": error, "allocations": tracker.events, "numel": x.numel(),
            "nbytes": x.numel() * x.element_size(),
            "host_peak_bytes": max(host.peak_bytes, host_peak),
            "profiler_peak_bytes": max(profiler.peak_bytes, peak),
            "profiler_peak_op": profiler.peak_op if profiler.peak_bytes >= peak else peak_op,
            "cuda_peak_bytes": cuda_peak,
            "outside_windows": [] if window is None else [window]}


def probe_autograd(function: Any, case: Case, device: str, arena: Arena,
                   meter: OutsideMeter) -> dict[str, Any]:
    """What autograd makes of the call, both ways.

    Backward: `x` is a non-leaf that requires grad, the call runs with grad mode on, then
    `(x * w).sum()` is backpropagated to the leaf. A write autograd records either breaks a
    tensor it saved (backward raises its in-place error, as the reference's own in-place
    chain may) or gives the true gradient; a write it cannot see (through `.data`, under
    `no_grad`, via numpy) leaves the gradient wrong and raises nothing.
    Forward: `x` carries a tangent `w` (forward-mode AD), which every in-place op it records
    carries along, and no saved tensor can stop: a write through `.data` leaves the tangent
    behind even where backward raises for the reference too (softmax_).
    The second tensor (axpy_'s `x`, ema_update_'s `new`) requires grad and carries a tangent
    too: a write under `no_grad` hides it, where the derivative in `x` alone is the identity.
    The count of versions cannot tell: one write autograd sees advances it."""
    leaf = build_base(case, device).requires_grad_()
    other_leaf = build_other(case, device)
    if other_leaf is not None:
        other_leaf.requires_grad_()
    with enable_grad():
        x = leaf * 1.0  # a non-leaf: autograd's in-place rules for leaves are lab autograd's
        other = None if other_leaf is None else other_leaf * 1.0
        returned, error = call_student(function, *build_args(case, x, other),
                                       **case.get("kwargs", {}))
        record: dict[str, Any] = {"error": error, "returned_is_x": returned is x,
                                  "backward_error": None, "grad": None, "other_grad": None,
                                  "forward_error": None, "tangent": None}
        if error is not None:
            return record
        _, record["backward_error"] = call_student(
            lambda: backward((x * loss_weights(x)).sum()))
    if record["backward_error"] is None and leaf.grad is not None:
        record["grad"] = tensors.values(leaf.grad)
    if record["backward_error"] is None and other_leaf is not None \
            and other_leaf.grad is not None:
        record["other_grad"] = tensors.values(other_leaf.grad)
    # The whole forward-mode run inside call_student: a submission that left a dual level of
    # its own open, or closed the probe's, fails this case rather than the child.
    tangent, record["forward_error"] = call_student(_forward_tangent, function, case, device)
    record["tangent"] = tangent
    return record


def _forward_tangent(function: Any, case: Case, device: str) -> torch.Tensor | None:
    """The tangent `x` carries after the call, `x` a dual tensor with tangent `w` (a copy)."""
    primal, other = build_base(case, device), build_other(case, device)
    with forward_mode() as forward:
        x = forward.dual(primal, loss_weights(primal))
        if other is not None:
            other = forward.dual(other, loss_weights(other))
        function(*build_args(case, x, other), **case.get("kwargs", {}))
        tangent = forward.tangent(x)
        return None if tangent is None else tensors.values(tangent)


def probe_rejects(function: Any, case: Case, device: str, arena: Arena,
                  meter: OutsideMeter) -> dict[str, Any]:
    """A call the function must refuse (clamp_ with neither bound, axpy_ with an x that
    would grow y), leaving `x` untouched."""
    x = build_base(case, device)
    values, version = tensors.values(x), tensors._version(x)
    _, error = call_student(function, *build_args(case, x, build_other(case, device)),
                            **case.get("kwargs", {}))
    return {"error": None, "raised": error,
            "untouched": tensors.same_values(x, values) and tensors._version(x) == version}
