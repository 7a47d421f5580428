"""Child side of the optim lab: run the submission on each case and record what happened.

Everything returned is plain data or CPU tensors; no verdict is made here. The members the
sandbox calls are grader/sandbox/probes_contract.py's `LabProbes`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
from grader.checks.policy import CallRecorder
from grader.labs.optim.inputs import (
    WITNESSED_GRADS,
    Case,
    attach_grads,
    build_params,
    step_grads,
)
from grader.labs.optim.inputs import witnessed as witnessed
from grader.labs.optim.plan import FORBIDDEN_PACKAGE, STATE_KEYS, lab_cases
from grader.labs.optim.plan import FUNCTIONS as FUNCTIONS
from grader.sandbox.audit import keep_originals
from grader.sandbox.child import call_student
from grader.sandbox.outside_meter import NO_METER, OutsideMeter
from grader.sandbox.probing import no_grad, run_cases
from grader.sandbox.witness import NO_ARENA, Arena

_recorder = CallRecorder(FORBIDDEN_PACKAGE)


def warm_up() -> None:
    """Runs once in the zygote, so every child inherits it: the meters' one-time start-up, and
    torch.optim's callables wrapped to record calls (once, not per child:
    docs/sandbox.md#numbers-behind-the-code)."""
    warm_up_meters()
    _recorder.install(keep_originals)
    _draw_every_case()


def _draw_every_case() -> None:
    """Draw each case's inputs once here; the children copy them (inputs.py caches)."""
    for function in FUNCTIONS:
        for case in lab_cases(function):
            params = build_params(case, "cpu")
            attach_grads(params, case.get("grads", ["normal"] * len(params)), case["seed"])
            for step in range(case.get("steps", 0)):
                step_grads(case, params, step)


def describe_api(module: ModuleType) -> dict[str, Any]:
    return describe_module(module, FUNCTIONS)


def probe(module: ModuleType, function: str, *, device: str, cases: list[Case],
          arena: Arena = NO_ARENA, meter: OutsideMeter = NO_METER) -> dict[str, Any]:
    def run(target: Any, case: Case) -> dict[str, Any]:
        if case["probe"] == "sgd_step":  # the one probe with an allocation case
            return probe_sgd_step(target, case, device, arena, meter)
        return _PROBES[case["probe"]](target, case, device, arena)

    return {"cases": run_cases(module, function, cases, run)}


def _iterable(params: list[torch.Tensor], how: str) -> Iterable[torch.Tensor]:
    return (p for p in params) if how == "generator" else list(params)


def _kwargs(case: Case, key: str) -> dict[str, Any]:
    return {} if case.get(key) is None else {key: case[key]}


# --- zero_grad ---------------------------------------------------------------------------

def probe_zero_grad(zero_grad: Callable[..., Any], case: Case, device: str,
                    arena: Arena) -> dict[str, Any]:
    params = build_params(case, device)
    attach_grads(params, case["grads"], case["seed"])
    # The plain gradients live in the arena, which the grader reads itself.
    kept = [kind in WITNESSED_GRADS for kind in case["grads"]]
    shared = iter(arena.share(case["id"], [p.grad for p, keep in zip(params, kept, strict=True)
                                           if keep and p.grad is not None]))
    for p, keep in zip(params, kept, strict=True):
        if keep:
            p.grad = next(shared)
    grads = [p.grad for p in params]
    aliases = [None if g is None else tensors._detach(g) for g in grads]
    before = [None if g is None else tensors.state(g) for g in grads]
    param_values = [tensors.values(p) for p in params]
    param_versions = [tensors._version(p) for p in params]
    _, error = call_student(zero_grad, _iterable(params, case["iterable"]),
                            **_kwargs(case, "set_to_none"))
    after = []
    for index, p in enumerate(params):
        grad, original = p.grad, grads[index]
        after.append({
            "grad_is_none": grad is None,
            "same_object": grad is original and original is not None,
            "state_before": before[index],
            "state_after": None if grad is None else tensors.state(grad),
            "grad_values": None if grad is None else tensors.values(grad),
            "alias_values": None if (alias := aliases[index]) is None else tensors.values(alias),
            "param_unchanged": tensors.same_values(p, param_values[index])
            and tensors._version(p) == param_versions[index],
        })
    return {"error": error, "params": after}


# --- sgd_step ----------------------------------------------------------------------------

def probe_sgd_step(sgd_step: Callable[..., Any], case: Case, device: str,
                   arena: Arena, meter: OutsideMeter = NO_METER) -> dict[str, Any]:
    """An allocation case's call made again with no meter of this process on is measured
    from outside on the CPU (as in lab tensor_ops: outside_meter.py)."""
    # State cases: the parameters live in the arena, which the grader reads itself.
    params = arena.share(case["id"], build_params(case, device))
    attach_grads(params, case["grads"], case["seed"])
    meter = meter if device == "cpu" else NO_METER
    if case.get("measure") == "allocation" and case.get("meters") == "dispatch":
        # The dispatch tracker only: a dtype's own case, where what is sought is an aten op
        # (a `.float()` copy) that the tracker names; the float32 case runs every meter.
        with no_grad(), AllocationTracker([*params, *(p.grad for p in params)]) as tracker:
            _, error = call_student(sgd_step, _iterable(params, case["iterable"]), case["lr"])
        largest = max(params, key=lambda p: p.numel())
        return {"error": error, "allocations": tracker.events, "numel": largest.numel(),
                "nbytes": largest.numel() * largest.element_size(), "host_peak_bytes": 0,
                "profiler_peak_bytes": 0, "profiler_peak_op": None}
    if case.get("measure") == "allocation":
        arguments = [*params, *(p.grad for p in params)]
        with no_grad(), HostMemoryMeter() as host, ProfilerMeter() as profiler, \
                AllocationTracker(arguments) as tracker:
            _, error = call_student(sgd_step, _iterable(params, case["iterable"]), case["lr"])
        again = build_params(case, device)  # fresh inputs, with no meter of this process on
        attach_grads(again, case["grads"], case["seed"])
        with no_grad():
            _, window, measured = meter.measure(lambda: call_student(
                sgd_step, _iterable(again, case["iterable"]), case["lr"]))
        peak, peak_op, host_peak = 0, "", 0
        if not measured:  # nothing outside to ask: the profiler stands in, seen as it is
            again = build_params(case, device)
            attach_grads(again, case["grads"], case["seed"])
            peak, peak_op, host_peak = without_dispatch_mode(
                lambda: call_student(sgd_step, _iterable(again, case["iterable"]), case["lr"]))
        largest = max(params, key=lambda p: p.numel())
        return {"error": error, "allocations": tracker.events, "numel": largest.numel(),
                "nbytes": largest.numel() * largest.element_size(),
                "host_peak_bytes": max(host.peak_bytes, host_peak),
                "profiler_peak_bytes": max(profiler.peak_bytes, peak),
                "profiler_peak_op": profiler.peak_op if profiler.peak_bytes >= peak else peak_op,
                "outside_windows": [] if window is None else [window]}
    grads = [p.grad for p in params]
    grad_values = [None if g is None else tensors.values(g) for g in grads]
    grad_states = [None if g is None else tensors.state(g) for g in grads]
    aliases = [tensors._detach(p) for p in params]
    before = [tensors.state(p) for p in params]
    _, error = call_student(sgd_step, _iterable(params, case["iterable"]), case["lr"])
    after = []
    for index, p in enumerate(params):
        grad = p.grad
        after.append({
            "state_before": before[index],
            "state_after": tensors.state(p),
            "values": tensors.values(p),
            "alias_values": tensors.values(aliases[index]),
            "grad_untouched": _grad_untouched(grad, grads[index], grad_values[index],
                                              grad_states[index]),
        })
    return {"error": error, "params": after}


def _grad_untouched(grad: torch.Tensor | None, original: torch.Tensor | None,
                    original_values: torch.Tensor | None, original_state: dict | None) -> bool:
    if original is None or original_values is None or original_state is None:
        return grad is None
    return (grad is original and tensors.same_values(grad, original_values)
            and tensors._version(grad) == original_state["version"])


# --- SGD and Adam ------------------------------------------------------------------------

def probe_optimizer_trajectory(cls: type, case: Case, device: str, arena: Arena) -> dict[str, Any]:
    params = arena.share(case["id"], build_params(case, device))  # read by the grader too
    optimizer, error = call_student(cls, _iterable(params, case["iterable"]), **case["config"])
    steps: list[dict[str, Any]] = []
    kept_state: dict[tuple[int, str], tuple[torch.Tensor, int]] = {}
    kept_grads: list[torch.Tensor | None] = [None] * len(params)
    for step in range(case["steps"] if error is None else 0):
        grads = _refill(kept_grads, step_grads(case, params, step))
        for p, g in zip(params, grads, strict=True):
            p.grad = g
        grad_values = [None if g is None else tensors.values(g) for g in grads]
        grad_states = [None if g is None else tensors.state(g) for g in grads]
        before = [tensors.state(p) for p in params]
        _, error = call_student(optimizer.step)
        record: dict[str, Any] = {"params": [], "error": error}
        for index, p in enumerate(params):
            grad = grads[index]
            record["params"].append({
                "values": tensors.values(p),
                "state_before": before[index],
                "state_after": tensors.state(p),
                "had_grad": grad is not None,
                "grad_untouched": _grad_untouched(p.grad, grad, grad_values[index],
                                                  grad_states[index]),
                "state": _optimizer_state(optimizer, p, index, step, kept_state, case["class"]),
            })
        steps.append(record)
        if error is not None:
            break
    return {"error": error if not steps else None, "steps": steps}


def _refill(kept: list[torch.Tensor | None],
            fresh: list[torch.Tensor | None]) -> list[torch.Tensor | None]:
    """The step's gradients written into the tensors of the step before, as `backward`
    accumulates into the `.grad` it keeps (after `zero_grad(set_to_none=False)`): state that
    aliases the caller's gradient (`buf = p.grad`, no clone) sees the next step's values. A
    parameter without a gradient at a step gets a fresh tensor at its next, as backward makes;
    so does one whose gradient the step left unwritable (the grad_untouched check says so)."""
    grads: list[torch.Tensor | None] = []
    for index, grad in enumerate(fresh):
        own = kept[index]
        if grad is not None and own is not None and own.shape == grad.shape \
                and own.dtype == grad.dtype and own.device == grad.device:
            try:
                with no_grad():
                    own.copy_(grad)  # in place on the caller's gradient, as backward writes
                grad = own
            except Exception:  # a gradient the step made unwritable: a fresh one
                pass
        kept[index] = grad
        grads.append(grad)
    return grads


def _optimizer_state(optimizer: Any, p: torch.Tensor, index: int, step: int,
                     kept: dict[tuple[int, str], tuple[torch.Tensor, int]],
                     kind: str) -> dict[str, Any]:
    """Which state entries exist for `p`, and whether each kept its identity and memory.

    Identity is judged from the step after which torch's own optimizer keeps the buffer: the
    second step for SGD (the first one creates it by cloning), the first step for Adam.
    """
    try:
        entry = optimizer.state[p]
    except BaseException:
        return {"missing": True}
    if not isinstance(entry, dict):
        return {"missing": True}
    reference_step = 1 if kind == "SGD" else 0
    found: dict[str, Any] = {"missing": False}
    for key in STATE_KEYS.get(kind, ()):
        value = entry.get(key)
        if not isinstance(value, torch.Tensor):
            found[key] = None
            continue
        if step == reference_step:
            kept[(index, key)] = (value, tensors._data_ptr(value))
        first = kept.get((index, key))
        found[key] = {
            "same_object": first is None or value is first[0],
            "same_ptr": first is None or tensors._data_ptr(value) == first[1],
        }
    if "step" in entry:
        raw = entry["step"]
        try:
            found["step"] = float(raw.item() if isinstance(raw, torch.Tensor) else raw)
        except BaseException:
            found["step"] = None
    return found


def probe_optimizer_validation(cls: type, case: Case, device: str, arena: Arena) -> dict[str, Any]:
    params = build_params(case, device)
    _, error = call_student(cls, list(params), **case["config"])
    return {"error": None, "raised": error}


def probe_optimizer_zero_grad(cls: type, case: Case, device: str, arena: Arena) -> dict[str, Any]:
    params = build_params(case, device)
    optimizer, error = call_student(cls, list(params), **case["config"])
    if error is not None:
        return {"error": error}
    attach_grads(params, ["normal"] * len(params), case["seed"])
    _, error = call_student(optimizer.zero_grad)
    default_all_none = all(p.grad is None for p in params)
    attach_grads(params, ["normal"] * len(params), case["seed"])
    grads = [p.grad for p in params]
    if error is None:
        _, error = call_student(optimizer.zero_grad, set_to_none=False)
    kept = all(p.grad is g for p, g in zip(params, grads, strict=True))
    zeros = all(p.grad is not None and bool((tensors.values(p.grad) == 0).all()) for p in params)
    return {"error": error, "default_all_none": default_all_none, "kept_and_zeroed": kept and zeros}


_PROBES: dict[str, Callable[[Any, Case, str, Arena], dict[str, Any]]] = {
    "zero_grad": probe_zero_grad,
    "sgd_step": probe_sgd_step,
    "trajectory": probe_optimizer_trajectory,
    "validation": probe_optimizer_validation,
    "optimizer_zero_grad": probe_optimizer_zero_grad,
}
