"""Child side of the autograd lab: call each function on each case and record what happened.

The members the sandbox calls are grader/sandbox/probes_contract.py's `LabProbes`.
"""

from __future__ import annotations

import contextlib
from types import ModuleType
from typing import Any

import torch

from grader.checks import tensors
from grader.checks.allocation import AllocationTracker, warm_up_meters
from grader.checks.api import describe_module
from grader.labs.autograd.inputs import Case, build_start, build_value, draw, loss_weights
from grader.labs.autograd.inputs import witnessed as witnessed
from grader.labs.autograd.plan import FUNCTIONS as FUNCTIONS
from grader.sandbox.child import call_student
from grader.sandbox.outside_meter import NO_METER, OutsideMeter
from grader.sandbox.probing import backward, gradcheck, no_grad, run_cases
from grader.sandbox.witness import NO_ARENA, Arena


def warm_up() -> None:
    """Runs once in the zygote, so every child inherits it: the meters' one-time start-up."""
    warm_up_meters()


def describe_api(module: ModuleType) -> dict[str, Any]:
    return describe_module(module, FUNCTIONS)


def probe(module: ModuleType, function: str, *, device: str, cases: list[Case],
          arena: Arena = NO_ARENA, meter: OutsideMeter = NO_METER) -> dict[str, Any]:
    """`meter` goes unused: this lab's one allocation check is of the forward pass, whose
    saved tensors are the point (the dispatch tracker names them)."""
    observed = run_cases(module, function, cases,
                         lambda target, case: _PROBES[function](target, case, device, arena))
    return {"cases": observed}


def _grad(t: torch.Tensor | None) -> torch.Tensor | None:
    return None if t is None else tensors.values(t)


def _backward(result: Any, weights: torch.Tensor) -> dict[str, Any] | None:
    """Run `(result * weights).sum().backward()`; the error as data, if any."""
    def run() -> None:
        backward((result * weights).sum())

    _, error = call_student(run)
    return error


# --- update_leaf_ ----------------------------------------------------------------------------

def probe_update_leaf(update_leaf_: Any, case: Case, device: str, arena: Arena) -> dict[str, Any]:
    leaf = arena.share(case["id"], [build_start(case, device)[0]])[0]  # read by the grader too
    if case.get("has_grad"):
        leaf.grad = draw(list(leaf.shape), case["seed"] + 3, case["dtype"], device)
    grad = leaf.grad
    grad_values = _grad(grad)
    alias = tensors._detach(leaf)
    before = tensors.state(leaf)
    returned, error = call_student(update_leaf_, leaf, build_value(case, device))
    grad_kept = (grad is None and leaf.grad is None) or (
        grad is not None and grad_values is not None and leaf.grad is grad
        and tensors.same_values(grad, grad_values))
    return {"error": error, "returned_is_leaf": returned is leaf, "state_before": before,
            "state_after": tensors.state(leaf), "values": tensors.values(leaf),
            "alias_values": tensors.values(alias), "grad_kept": grad_kept}


# --- add_or_copy -----------------------------------------------------------------------------

def probe_add_or_copy(add_or_copy: Any, case: Case, device: str, arena: Arena) -> dict[str, Any]:
    t, leaf = build_start(case, device)
    value = build_value(case, device)
    t_values, t_version = tensors.values(t), tensors._version(t)
    paused = no_grad() if case["kind"] == "no_grad_leaf" else contextlib.nullcontext()
    with paused:
        returned, error = call_student(add_or_copy, t, value)
    record: dict[str, Any] = {
        "error": error, "t_untouched": tensors.same_values(t, t_values)
        and tensors._version(t) == t_version, "t_version": t_version,
        "t_version_advanced": tensors._version(t) > t_version,
    }
    if error is not None:
        return record
    if not (isinstance(returned, (tuple, list)) and len(returned) == 2):
        record["shape_of_return"] = type(returned).__name__
        return record
    result, flag = returned
    record["return_kind"] = type(returned).__name__
    record.update({"flag": flag if isinstance(flag, bool) else repr(flag)[:40],
                   "result_is_t": result is t,
                   "result_is_tensor": isinstance(result, torch.Tensor)})
    if not isinstance(result, torch.Tensor):
        return record
    record.update({"result_values": tensors.values(result)})
    if result.requires_grad and case["kind"] != "plain":
        record["backward_error"] = _backward(result, loss_weights(list(result.shape), case,
                                                                  device))
        record["leaf_grad"] = _grad(leaf.grad)
    return record


# --- fixed_block -----------------------------------------------------------------------------

def _block_inputs(case: Case, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    x = draw(case["x_shape"], case["seed"], case["dtype"], device).requires_grad_()
    w = draw(case["w_shape"], case["seed"] + 1, case["dtype"], device).requires_grad_()
    return x, w


def probe_fixed_block(fixed_block: Any, case: Case, device: str, arena: Arena) -> dict[str, Any]:
    x, w = _block_inputs(case, device)
    if case["measure"] == "allocation":
        with AllocationTracker([x, w]) as tracker:  # grad mode on: the forward pass as trained
            _, error = call_student(fixed_block, x, w)
        return {"error": error, "allocations": tracker.events,
                "numel": case["x_shape"][0] * case["w_shape"][1]}
    if case["measure"] == "gradcheck":
        def check() -> bool:
            return bool(gradcheck(lambda a, b: fixed_block(a, b), (x, w)))

        passed, error = call_student(check)
        return {"error": None, "gradcheck": passed is True, "gradcheck_error": error}
    x_values, w_values = tensors.values(x), tensors.values(w)
    x_version, w_version = tensors._version(x), tensors._version(w)
    out, error = call_student(fixed_block, x, w)
    record: dict[str, Any] = {"error": error}
    if error is None and not isinstance(out, torch.Tensor):
        record["value_type"] = type(out).__name__
    elif error is None:
        record["value"] = tensors.values(out)
        _, record["backward_error"] = call_student(lambda: backward(out.sum()))
        record["x_grad"], record["w_grad"] = _grad(x.grad), _grad(w.grad)
    record["inputs_untouched"] = (tensors.same_values(x, x_values)
                                  and tensors.same_values(w, w_values)
                                  and tensors._version(x) == x_version
                                  and tensors._version(w) == w_version)
    return record


# --- snapshot and alias ------------------------------------------------------------------------

def _storage_ptr(t: torch.Tensor) -> int:
    return int(t.untyped_storage().data_ptr())


def probe_snapshot(snapshot: Any, case: Case, device: str, arena: Arena) -> dict[str, Any]:
    t, _ = build_start(case, device)
    t_values, t_version = tensors.values(t), tensors._version(t)
    out, error = call_student(snapshot, t)
    record: dict[str, Any] = {"error": error, "t_untouched": tensors.same_values(t, t_values)
                              and tensors._version(t) == t_version}
    if error is not None or not isinstance(out, torch.Tensor):
        record["result_type"] = type(out).__name__
        return record
    before = tensors.values(out)
    record.update({"values": before,
                   "shares_storage": _storage_ptr(out) == _storage_ptr(t),
                   "state": tensors.state(out)})
    with no_grad():
        t.add_(1.0)  # our own probe's write: must not reach an independent copy
    record["sees_later_writes"] = not tensors.same_values(out, before)
    return record


def probe_alias(alias: Any, case: Case, device: str, arena: Arena) -> dict[str, Any]:
    t, _ = build_start(case, device)
    t_values = tensors.values(t)
    out, error = call_student(alias, t)
    record: dict[str, Any] = {"error": error, "t_untouched": tensors.same_values(t, t_values)}
    if error is not None or not isinstance(out, torch.Tensor):
        record["result_type"] = type(out).__name__
        return record
    record.update({"values": tensors.values(out),
                   "same_ptr": tensors._data_ptr(out) == tensors._data_ptr(t)
                   and _storage_ptr(out) == _storage_ptr(t),
                   "state": tensors.state(out)})
    out_version, t_version = tensors._version(out), tensors._version(t)
    with no_grad():
        t.add_(0.0)  # bumps t's counter: a true alias sees it
    seen_by_alias = tensors._version(out) > out_version
    with no_grad():
        _, write_error = call_student(lambda: out.add_(0.0))
    seen_by_t = write_error is None and tensors._version(t) > t_version + 1
    record["shares_version"] = seen_by_alias and seen_by_t
    return record


_PROBES = {
    "update_leaf_": probe_update_leaf,
    "add_or_copy": probe_add_or_copy,
    "fixed_block": probe_fixed_block,
    "snapshot": probe_snapshot,
    "alias": probe_alias,
}
