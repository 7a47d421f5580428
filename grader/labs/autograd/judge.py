"""Grading-process side of the autograd lab: the checks table and the rules that judge the
probes' records (the cases are plan.py's, the expected values reference.py's)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from grader.checks.allocation import full_size_temporaries
from grader.checks.core import (
    Selector,
    computes,
    each_case,
    every_case,
    judge_cases,
    plain_leaf,
    storage_kept,
    unless_computing,
    version_advanced,
)
from grader.checks.dtypes import DTYPES
from grader.checks.errors import error_finding
from grader.checks.evidence import Evidence
from grader.checks.findings import Finding, fail, first_failure, phrase, returned
from grader.checks.numerics import mismatch
from grader.checks.tensors import same_values
from grader.labs.autograd import FILENAME, reference, reproduce
from grader.labs.autograd.inputs import (
    Case,
    build_start,
    build_value,
    draw,
    witnessed,
)
from grader.labs.autograd.plan import (
    FUNCTIONS,
    MAX_FULL_SIZE_TENSORS,
    SIGNATURES,
    lab_cases,
)
from grader.labs.autograd.records import record_type
from grader.labs.base import CheckSpec, Lab, signature_judge


def _group(name: str) -> Selector:
    return lambda case: case.get("group") == name


# --- judging helpers ---------------------------------------------------------------------------

def _kind(case: Case) -> Any:
    """What the function received, as a noun phrase ("float32 leaf that requires grad")."""
    return phrase(f"kind_{case.get('kind', 'leaf')}", dtype=case["dtype"])


def _for(case: Case) -> Any:
    """`_kind` as a where-fragment ("for a float32 leaf that requires grad")."""
    return phrase("for_kind", kind=_kind(case))


def _values(actual: torch.Tensor, expected: torch.Tensor, *, tensor: str, case: Case
            ) -> Finding | None:
    found = mismatch(actual, expected)
    if found is None:
        return None
    if found["reason"] == "shape":
        return fail("shape_mismatch", tensor=tensor, where=_for(case),
                    expected=found["expected_shape"], got=found["actual_shape"])
    return fail("values_mismatch", tensor=tensor, where=_for(case), **found)


# --- update_leaf_ ------------------------------------------------------------------------------

def apply_witness(function: str, case: Case, observed: dict[str, Any],
                  memory: list[torch.Tensor]) -> str | None:
    """The leaf's own memory after the call, read by the grading process, is what the record
    says it saw through the leaf's alias."""
    if "alias_values" not in observed:  # the function is missing: nothing was called
        return None
    (leaf,) = memory
    if not same_values(observed["alias_values"], leaf):
        return "leaf"
    observed["alias_values"] = leaf
    return None


def _update_identity(case: Case, obs: dict[str, Any]) -> Finding | None:
    if not obs["returned_is_leaf"]:
        return fail("not_returned", function="update_leaf_", tensor="leaf", where=_for(case),
                    got=phrase("new_tensor"))
    return None


def _update_storage(case: Case, obs: dict[str, Any]) -> Finding | None:
    return storage_kept("update_leaf_", "leaf", obs["state_before"], obs["state_after"],
                        obs["alias_values"], obs["values"], where=_kind(case))


def _update_version(case: Case, obs: dict[str, Any]) -> Finding | None:
    return version_advanced("update_leaf_", "leaf", obs["state_before"], obs["state_after"],
                            where=_kind(case))


def _update_history(case: Case, obs: dict[str, Any]) -> Finding | None:
    return plain_leaf("update_leaf_", "leaf", obs["state_after"])


def _update_grad(case: Case, obs: dict[str, Any]) -> Finding | None:
    if not obs["grad_kept"]:
        return fail("grad_lost", function="update_leaf_", tensor="leaf.grad")
    return None


def _update_values(case: Case, obs: dict[str, Any]) -> Finding | None:
    return _values(obs["values"], reference.expected_add(case), tensor="leaf",
                   case=case)


# --- add_or_copy -------------------------------------------------------------------------------

def _returned_pair(case: Case, obs: dict[str, Any]) -> Finding | None:
    if "flag" not in obs:
        return fail("add_or_copy_return", got=obs.get("shape_of_return", "?"))
    return None


def _returns_tuple(case: Case, obs: dict[str, Any]) -> Finding | None:
    """`-> tuple[Tensor, bool]` (docs/semantics.md#autograd); the other checks accept any pair,
    this one is exact."""
    bad = _returned_pair(case, obs)
    if bad is not None:
        return bad
    if obs["return_kind"] != "tuple" or not isinstance(obs["flag"], bool) or not obs[
            "result_is_tensor"]:
        first = "tensor" if obs["result_is_tensor"] else "?"
        return fail("add_or_copy_return", got=f"{obs['return_kind']} ({first}, {obs['flag']})")
    return None


def _add_in_place(case: Case, obs: dict[str, Any]) -> Finding | None:
    bad = _returned_pair(case, obs)
    if bad is not None:
        return bad
    if obs["flag"] is not True or not obs["result_is_t"]:
        return fail("add_or_copy_not_in_place", where=_kind(case), flag=obs["flag"])
    return None


def _add_fallback(case: Case, obs: dict[str, Any]) -> Finding | None:
    bad = _returned_pair(case, obs)
    if bad is not None:
        return bad
    if obs["flag"] is not False or obs["result_is_t"]:
        return fail("add_or_copy_no_fallback", where=_kind(case), flag=obs["flag"])
    return None


def _add_values(case: Case, obs: dict[str, Any]) -> Finding | None:
    bad = _returned_pair(case, obs)
    if bad is not None:
        return bad
    if not obs["result_is_tensor"]:
        return fail("add_or_copy_return", got="not a tensor")
    return _values(obs["result_values"], reference.expected_add(case),
                   tensor="result", case=case)


def _add_t_untouched(case: Case, obs: dict[str, Any]) -> Finding | None:
    if not obs["t_untouched"]:
        return fail("input_modified", function="add_or_copy", tensor="t", where=_for(case))
    return None


def _add_version(case: Case, obs: dict[str, Any]) -> Finding | None:
    if not obs["t_version_advanced"]:
        return fail("version_unchanged", function="add_or_copy", tensor="t",
                    version=obs["t_version"], where=_kind(case))
    return None


def _add_graph(case: Case, obs: dict[str, Any]) -> Finding | None:
    bad = _returned_pair(case, obs)
    if bad is not None:
        return bad
    expected = reference.expected_leaf_grad(case)
    if expected is None:
        return None
    if obs.get("backward_error"):
        return error_finding(obs["backward_error"], function="add_or_copy", case_id=case["id"])
    got = obs.get("leaf_grad")
    if got is None:
        return fail("graph_lost", function="add_or_copy", where=_kind(case))
    return _values(got, expected, tensor="leaf.grad", case=case)


def _add_error(case: Case, obs: dict[str, Any]) -> Finding | None:
    error_type, message = reference.expected_error(case)
    raised = obs.get("error")
    if raised is None:
        return fail("error_swallowed", function="add_or_copy", error_type=error_type,
                    error=message, where=phrase("error_case", case=case["id"]))
    if raised["type"] == "NotImplementedError":
        return fail("not_implemented", function="add_or_copy")
    if raised["type"] != error_type or raised["message"] != message:
        return fail("error_changed", function="add_or_copy", error_type=error_type,
                    error=message, got_type=raised["type"], got_error=raised["message"])
    return None


# --- fixed_block -------------------------------------------------------------------------------

def _block_cases(measure: str) -> Selector:
    return lambda case: case["measure"] == measure


def _block_values(case: Case, obs: dict[str, Any]) -> Finding | None:
    if "value" not in obs:
        return fail("block_not_tensor", got=returned(obs.get("value_type", "?")))
    value, x_grad, w_grad = reference.expected_block(case)
    findings = [_values(obs["value"], value, tensor="fixed_block(x, w)", case=case)]
    if not obs.get("backward_error"):
        for name, got, want in (("x.grad", obs["x_grad"], x_grad), ("w.grad", obs["w_grad"],
                                                                     w_grad)):
            findings.append(fail("graph_lost", function="fixed_block", where=name)
                            if got is None else _values(got, want, tensor=name, case=case))
    return first_failure([f for f in findings if f is not None])


def _block_backward(case: Case, obs: dict[str, Any]) -> Finding | None:
    if obs.get("backward_error"):
        return error_finding(obs["backward_error"], function="fixed_block", case_id=case["id"])
    return None


def _block_gradcheck(case: Case, obs: dict[str, Any]) -> Finding | None:
    if obs["gradcheck"]:
        return None
    error = obs.get("gradcheck_error") or {}
    if error.get("type") == "NotImplementedError":
        return fail("not_implemented", function="fixed_block")
    if error and error.get("type") != "GradcheckError":
        return error_finding(error, function="fixed_block", case_id=case["id"])
    return fail("gradcheck_failed", function="fixed_block",
                error=(error.get("message") or "")[:200])


def _block_inputs(case: Case, obs: dict[str, Any]) -> Finding | None:
    if not obs["inputs_untouched"]:
        return fail("input_modified", function="fixed_block", tensor="x, w", where="")
    return None


def _block_allocation(case: Case, obs: dict[str, Any]) -> Finding | None:
    numel = obs["numel"]
    full = [e for e in full_size_temporaries(obs["allocations"], numel=numel)
            if e["numel"] == numel]
    if len(full) > MAX_FULL_SIZE_TENSORS:
        return fail("too_many_tensors", function="fixed_block", count=len(full),
                    limit=MAX_FULL_SIZE_TENSORS, ops=", ".join(e["op"] for e in full))
    return None


# --- snapshot and alias --------------------------------------------------------------------------

def _result_tensor(function: str) -> Callable[[Case, dict[str, Any]], Finding | None]:
    def rule(case: Case, obs: dict[str, Any]) -> Finding | None:
        if "values" not in obs:
            return fail("not_a_tensor", function=function,
                        got=returned(obs.get("result_type", "?")))
        return None

    return rule


def _copy_values(function: str) -> Callable[[Case, dict[str, Any]], Finding | None]:
    def rule(case: Case, obs: dict[str, Any]) -> Finding | None:
        return _result_tensor(function)(case, obs) or _values(
            obs["values"], reference.start_values(case).to(DTYPES[case["dtype"]]),
            tensor=f"{function}(t)", case=case)

    return rule


def _snap_storage(case: Case, obs: dict[str, Any]) -> Finding | None:
    bad = _result_tensor("snapshot")(case, obs)
    if bad is not None:
        return bad
    if obs["shares_storage"] or obs["sees_later_writes"]:
        return fail("snapshot_shares_memory", where=_kind(case))
    return None


def _no_link(function: str) -> Callable[[Case, dict[str, Any]], Finding | None]:
    def rule(case: Case, obs: dict[str, Any]) -> Finding | None:
        bad = _result_tensor(function)(case, obs)
        if bad is not None:
            return bad
        state = obs["state"]
        if state["requires_grad"] or state["grad_fn"] is not None:
            return fail("autograd_link", function=function, where=_kind(case),
                        requires_grad=state["requires_grad"], grad_fn=state["grad_fn"] or "None")
        return None

    return rule


def _t_untouched(function: str) -> Callable[[Case, dict[str, Any]], Finding | None]:
    def rule(case: Case, obs: dict[str, Any]) -> Finding | None:
        if not obs["t_untouched"]:
            return fail("input_modified", function=function, tensor="t", where=_for(case))
        return None

    return rule


def _alias_storage(case: Case, obs: dict[str, Any]) -> Finding | None:
    bad = _result_tensor("alias")(case, obs)
    if bad is not None:
        return bad
    if not obs["same_ptr"]:
        return fail("alias_not_shared", where=_kind(case))
    return None


def _alias_version(case: Case, obs: dict[str, Any]) -> Finding | None:
    bad = _result_tensor("alias")(case, obs)
    if bad is not None:
        return bad
    if not obs["shares_version"]:
        return fail("alias_version", where=_kind(case))
    return None


# --- hidden cases ------------------------------------------------------------------------------

def _torch_allows_add(case: Case) -> bool:
    """Whether `t.add_(value)` succeeds on this case's tensor, in the case's grad mode."""
    t, _ = build_start(case, "cpu")
    paused = torch.no_grad() if case["kind"] == "no_grad_leaf" else contextlib.nullcontext()
    try:
        with paused:
            t.add_(build_value(case, "cpu"))
    except RuntimeError:
        return False
    return True


def validate_case(case: Case) -> None:
    """Build what judging `case` needs; raise if the case cannot be graded (hidden cases)."""
    if case.get("dtype") not in DTYPES:
        raise ValueError(f"dtype {case.get('dtype')!r} is not one of {', '.join(DTYPES)}")
    if "x_shape" in case:  # fixed_block
        if case["measure"] == "allocation":
            draw(case["x_shape"], case["seed"], case["dtype"], "cpu")
        else:
            reference.expected_block(case)
        return
    build_start(case, "cpu")
    group = case.get("group")
    if group == "error":
        reference.expected_error(case)
        return
    if case.get("value") == "string":
        raise ValueError("value 'string' belongs to the error cases")
    if group is not None or "value" in case:  # update_leaf_ and add_or_copy
        if reference.start_values(case).shape != reference.expected_add(case).shape:
            raise ValueError("t + value does not have t's shape")
        reference.expected_leaf_grad(case)
    if group == "allowed" and not _torch_allows_add(case):
        raise ValueError(f"torch refuses t.add_(value) for kind {case['kind']!r}")
    if group == "forbidden" and _torch_allows_add(case):
        raise ValueError(f"torch allows t.add_(value) for kind {case['kind']!r}")


# --- shown to compute ------------------------------------------------------------------------

def _computing(function: str, cases: Selector, key: str
               ) -> Callable[[Evidence], Iterator[bool | None]]:
    """Whether each case shows `function` adding `value` (checks/core.computes, on the values
    the record keeps under `key`): `leaf.mul_(1)` advances the version and adds nothing. See
    NOTE: [shown to compute] in checks/core.py; the gates name the version checks."""
    def verdicts(evidence: Evidence) -> Iterator[bool | None]:
        return (computes(reference.start_values(case), observed[key],
                         reference.expected_add(case)) if key in observed else False
                for case, observed, problem in each_case(evidence, function, cases)
                if problem.passed)

    return verdicts


# --- checks ----------------------------------------------------------------------------------

def _checks() -> tuple[CheckSpec, ...]:
    def spec(check_id: str, kind: Any, cases: Selector,
             rule: Callable[[Case, dict[str, Any]], Finding | None], *,
             shown_by: tuple[str, ...] = (), **options: Any) -> CheckSpec:
        function = check_id.split(".")[0]
        return CheckSpec(check_id, kind, judge_cases(function, cases, rule, **options),
                         shown_by=shown_by)

    allowed, forbidden, errors = _group("allowed"), _group("forbidden"), _group("error")
    # Any one passing shows update_leaf_ did something to the leaf (see CheckSpec.shown_by).
    leaf_did = ("update_leaf_.values", "update_leaf_.version_advances")
    both: Selector = lambda case: allowed(case) or forbidden(case)  # noqa: E731
    checks = [CheckSpec(f"{f}.signature", "api",
                        signature_judge(f, kind="function", parameters=SIGNATURES[f]),
                        per_device=False) for f in FUNCTIONS]
    checks += [
        spec("update_leaf_.returns_leaf", "identity", every_case, _update_identity,
             shown_by=leaf_did),
        spec("update_leaf_.same_memory", "storage", every_case, _update_storage,
             shown_by=leaf_did),
        CheckSpec("update_leaf_.version_advances", "version", unless_computing(
            judge_cases("update_leaf_", every_case, _update_version),
            _computing("update_leaf_", every_case, "values"),
            function="update_leaf_", tensor="leaf")),
        spec("update_leaf_.no_history", "autograd", every_case, _update_history,
             shown_by=leaf_did),
        spec("update_leaf_.keeps_grad", "side_effect", every_case, _update_grad,
             shown_by=leaf_did),
        spec("update_leaf_.values", "numerics", every_case, _update_values),
        # A case that raised costs the check that asks for its behaviour (falls back, in
        # place), not these. See NOTE: [a raise costs its case's own check] in checks/core.py.
        spec("add_or_copy.returns_pair", "api", both, _returns_tuple, spare_raised=True),
        spec("add_or_copy.in_place_when_allowed", "identity", allowed, _add_in_place,
             shown_by=("add_or_copy.values", "add_or_copy.version_advances")),
        CheckSpec("add_or_copy.version_advances", "version", unless_computing(
            judge_cases("add_or_copy", allowed, _add_version),
            _computing("add_or_copy", allowed, "result_values"),
            function="add_or_copy", tensor="t")),
        spec("add_or_copy.falls_back_when_forbidden", "autograd", forbidden, _add_fallback),
        spec("add_or_copy.fallback_leaves_t", "side_effect", forbidden, _add_t_untouched,
             shown_by=("add_or_copy.falls_back_when_forbidden", "add_or_copy.values"),
             spare_raised=True),
        spec("add_or_copy.values", "numerics", both, _add_values, spare_raised=True),
        spec("add_or_copy.keeps_graph", "autograd", both, _add_graph, spare_raised=True),
        spec("add_or_copy.other_errors_propagate", "autograd", errors, _add_error,
             allow_error=True),
        spec("fixed_block.values_and_gradients", "numerics", _block_cases("state"),
             _block_values),
        spec("fixed_block.backward_runs", "autograd", _block_cases("state"), _block_backward),
        spec("fixed_block.gradcheck", "autograd", _block_cases("gradcheck"), _block_gradcheck),
        spec("fixed_block.inputs_untouched", "side_effect", _block_cases("state"),
             _block_inputs,
             shown_by=("fixed_block.values_and_gradients", "fixed_block.backward_runs")),
        spec("fixed_block.keeps_safe_in_place", "allocation", _block_cases("allocation"),
             _block_allocation),
        spec("snapshot.values", "numerics", every_case, _copy_values("snapshot")),
        spec("snapshot.own_memory", "storage", every_case, _snap_storage),
        spec("snapshot.no_autograd_link", "autograd", every_case, _no_link("snapshot")),
        spec("snapshot.t_untouched", "side_effect", every_case, _t_untouched("snapshot"),
             shown_by=("snapshot.values", "snapshot.own_memory")),
        spec("alias.values", "numerics", every_case, _copy_values("alias")),
        spec("alias.same_memory", "storage", every_case, _alias_storage),
        spec("alias.shares_version", "version", every_case, _alias_version),
        spec("alias.no_history", "autograd", every_case, _no_link("alias")),
        spec("alias.t_untouched", "side_effect", every_case, _t_untouched("alias"),
             shown_by=("alias.values", "alias.same_memory")),
    ]
    return tuple(checks)



def describe(case: Case) -> list[Any]:
    """A case in a student's words: what the function received."""
    if "kind" in case:
        return [_kind(case)]
    if "x_shape" in case:
        x, w = ("×".join(map(str, case[key])) for key in ("x_shape", "w_shape"))
        return [phrase("case_block", dtype=case["dtype"], x=x, w=w)]
    return []

LAB = Lab(
    name="autograd",
    filename=FILENAME,
    functions=FUNCTIONS,
    checks=_checks(),
    cases=lab_cases,
    forbidden_package="",
    rubric_path=Path(__file__).with_name("rubric.toml"),
    validate_case=validate_case,
    witnessed=witnessed,
    apply_witness=apply_witness,
    describe_case=describe,
    record_type=record_type,
    reproducer=reproduce.reproducer,
)
