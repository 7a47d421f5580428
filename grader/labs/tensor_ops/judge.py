"""Grading-process side of tensor_ops: the checks table and the rules that judge the probes'
records (the cases are plan.py's)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from grader.checks.allocation import judge_allocations
from grader.checks.core import (
    Selector,
    computes,
    each_case,
    judge_cases,
    unless_computing,
)
from grader.checks.errors import error_finding
from grader.checks.evidence import Evidence
from grader.checks.findings import (
    PASS,
    Finding,
    Phrase,
    fail,
    first_failure,
    phrase,
    returned,
)
from grader.checks.numerics import mismatch
from grader.checks.tensors import same_values
from grader.labs.base import CheckSpec, Lab, cached_by_content, signature_judge
from grader.labs.tensor_ops import FILENAME, reference, reproduce
from grader.labs.tensor_ops.inputs import (
    FILLS,
    LAYOUTS,
    Case,
    build_other,
    view_of,
    witnessed,
)
from grader.labs.tensor_ops.plan import (
    FUNCTIONS,
    SIGNATURES,
    VIEW_LAYOUTS,
    lab_cases,
)
from grader.labs.tensor_ops.records import record_type


@cached_by_content
def expected(case: Case) -> tuple[torch.Tensor, torch.Tensor]:
    """(argument, base) expected after the call; cached, as cases are fixed and seeded."""
    return reference.expected(case)


# --- judging helpers -----------------------------------------------------------------------

def _describe(case: Case) -> Any:
    details = "".join(f", {k}={v}" for k, v in case.get("kwargs", {}).items())
    return phrase("tensor_case", dtype=case["dtype"], layout=phrase(f"layout_{case['layout']}"),
                  fill=phrase(f"fill_{case.get('fill', 'normal')}"), details=details)


def _in(*groups: str) -> Selector:
    return lambda case: case["group"] in groups


# The ordinary inputs, which every property of the function is judged on; the special ones
# (edges, broadcast) are read only by their own checks.
_ordinary = _in("values", "half", "views")


def judge_identity(function: str) -> Callable[[Evidence], Finding]:
    def judge(evidence: Evidence) -> Finding:
        for case, observed, problem in each_case(evidence, function, _ordinary):
            if not problem.passed:
                return problem
            if not observed["returned_is_x"]:
                return fail("not_returned", function=function, where=_describe(case),
                            got=returned(observed["returned_type"]),
                            tensor=_first_arg(function))
        return PASS

    return judge


def apply_witness(function: str, case: Case, observed: dict[str, Any],
                  memory: list[torch.Tensor]) -> str | None:
    """The base's own memory after the call, read by the grading process, is what the record
    says it saw through the argument's alias (and through the base, where the argument is a
    view of it: a rebound argument leaves its base as it was)."""
    if "alias_values" not in observed:  # the function is missing: nothing was called
        return None
    (base,) = memory
    through = view_of(base, case["layout"])
    if not same_values(observed["alias_values"], through):
        return _first_arg(function)
    observed["alias_values"] = through
    if through is not base:
        if not same_values(observed["base_values"], base):
            return f"{_first_arg(function)}._base"
        observed["base_values"] = base
    return None


def judge_storage(function: str) -> Callable[[Evidence], Finding]:
    def judge(evidence: Evidence) -> Finding:
        for case, observed, problem in each_case(evidence, function, _ordinary):
            if not problem.passed:
                return problem
            if case["layout"] == "empty":
                continue
            if observed["state_after"]["ptr"] != observed["state_before"]["ptr"]:
                return fail("storage_replaced", function=function, tensor=_first_arg(function),
                            where=_describe(case))
            if not same_values(observed["alias_values"], observed["values"]):
                return fail("writes_elsewhere", function=function, tensor=_first_arg(function))
        return PASS

    return judge


@cached_by_content
def expected_grads(case: Case) -> tuple[torch.Tensor, torch.Tensor | None]:
    return reference.expected_grads(case)


@cached_by_content
def expected_tangent(case: Case) -> torch.Tensor:
    return reference.expected_tangent(case)


# Autograd's errors that mean it saw a write: one that modified a tensor it had saved.
SEEN_WRITE_ERRORS = ("autograd_saved_error", "autograd_saved_input_error")
# Autograd refusing an op it cannot differentiate (an `out=` variant, an op without a
# forward-mode formula) is loud, not deceived.
UNDIFFERENTIABLE = ("is not implemented", "don't support automatic differentiation",
                    "does not support it")


# Autograd's own refusals of a write it saw and cannot allow (a view from `unbind`, which
# `for row in x` makes): loud too.
REFUSED_WRITES = ("autograd_view_error", "autograd_leaf_error", "autograd_inplace_error")


def refuses_autograd(error: dict[str, Any]) -> bool:
    """Whether autograd refused, loudly, to go along with the call (see UNDIFFERENTIABLE)."""
    return any(words in error["message"] for words in UNDIFFERENTIABLE) or error_finding(
        error, function="", case_id="").key in REFUSED_WRITES


def autograd_saw_every_write(function: str, case: Case,
                             observed: dict[str, Any]) -> Finding | None:
    """The autograd case (probes.probe_autograd): backward raised autograd's error for a saved
    tensor the function modified (it saw the write), or gave the true gradient; and forward
    mode carried the true tangent. A wrong gradient or tangent without an error, or another
    error at backward, means a write autograd did not see. An op that refuses forward mode
    (NotImplementedError) is loud, not deceived."""
    tensor = _first_arg(function)
    if observed["forward_error"] is not None and not refuses_autograd(observed["forward_error"]):
        return error_finding(observed["forward_error"], function=function, case_id=case["id"])
    if observed["forward_error"] is None and (
            observed["tangent"] is None
            or mismatch(observed["tangent"], expected_tangent(case)) is not None):
        return fail("write_unseen_forward", function=function, tensor=tensor,
                    where=_describe(case))
    raised = observed["backward_error"]
    if raised is not None:
        finding = error_finding(raised, function=function, case_id=case["id"])
        if finding.key in SEEN_WRITE_ERRORS or refuses_autograd(raised):
            return None
        return fail("backward_lost_write", function=function, tensor=tensor,
                    error=f"{raised['type']}: {raised['message']}"[:200])
    want, want_other = expected_grads(case)
    grad, other_grad = observed["grad"], observed.get("other_grad")
    wrong = grad is None or mismatch(grad, want) is not None or (
        want_other is not None and (other_grad is None
                                    or mismatch(other_grad, want_other) is not None))
    if wrong:
        return fail("write_unseen_by_autograd", function=function, tensor=tensor,
                    where=_describe(case))
    return None


def judge_version(function: str) -> Callable[[Evidence], Finding]:
    """The version advanced on every ordinary case, and on the autograd case autograd itself
    saw every write (where the values and the returned object are right: a wrong formula, or
    a new tensor, is charged by their own checks)."""
    def judge(evidence: Evidence) -> Finding:
        for case, observed, problem in each_case(evidence, function, _ordinary):
            if not problem.passed:
                return problem
            before, after = observed["state_before"], observed["state_after"]
            if case["layout"] != "empty" and after["version"] <= before["version"]:
                return fail("version_unchanged", function=function, tensor=_first_arg(function),
                            version=before["version"], where=_describe(case))
        if not (judge_values(function, "values")(evidence).passed
                and judge_identity(function)(evidence).passed):
            return PASS
        # A call that autograd refuses (`torch.add(..., out=y)` on an input requiring grad)
        # deceived no one: what this case catches is a write autograd missed silently.
        for case, observed, problem in each_case(evidence, function, _in("autograd"),
                                                 allow_error=True):
            if not problem.passed:
                return problem
            if observed.get("error"):
                if refuses_autograd(observed["error"]):
                    continue
                return error_finding(observed["error"], function=function, case_id=case["id"])
            if observed["returned_is_x"] and (
                    found := autograd_saw_every_write(function, case, observed)) is not None:
                return found
        return PASS

    # A version bump shows a write, not a computation: `x.mul_(1)` earns what `return x`
    # earns (see NOTE: [shown to compute] in checks/core.py).
    return unless_computing(judge, lambda evidence: computing(function, evidence),
                            function=function, tensor=_first_arg(function))


def case_computes(case: Case, observed: dict[str, Any]) -> bool | None:
    """The caller's memory, as the values checks read it, moved towards the reference's
    values on this case (checks/core.computes)."""
    if "values" not in observed:
        return False
    through_base = case["layout"] in VIEW_LAYOUTS  # the caller's memory is the base
    want_x, want_base = expected(case)
    original = _original_base(case)
    if through_base:
        return computes(original, observed["base_values"], want_base)
    return computes(view_of(original, case["layout"]), observed["values"], want_x)


def computing(function: str, evidence: Evidence) -> Iterator[bool | None]:
    """Whether each ordinary case of `function` shows it computing (lazily): right, or heading
    right, on part of what the lab asks. One wrong corner (an extreme fill, lo > hi) leaves
    the others to show it."""
    return (case_computes(case, observed)
            for case, observed, problem in each_case(evidence, function, _ordinary)
            if problem.passed)


SPECIAL_GROUPS = ("edges", "broadcast")


def judge_values(function: str, group: str) -> Callable[[Evidence], Finding]:
    """The values of one group of cases. A special group (edges, broadcast) judges what is
    special about it: it runs, and keeps the shape; its values are judged too, unless the
    ordinary values already fail, so that one formula mistake costs one check. On the edge
    inputs (empty, 0-dim) the returned object is judged too, unless returns_input already
    fails: a clone returned for an empty input alone costs this check."""
    def judge(evidence: Evidence) -> Finding:
        formula_wrong = group in SPECIAL_GROUPS and not judge_values(function, "values")(
            evidence).passed
        identity_judged = group == "edges" and judge_identity(function)(evidence).passed
        findings = []
        for case, observed, problem in each_case(evidence, function, _in(group)):
            if not problem.passed:
                return problem
            if identity_judged and not observed["returned_is_x"]:
                findings.append(fail("not_returned", function=function, where=_describe(case),
                                     got=returned(observed["returned_type"]),
                                     tensor=_first_arg(function)))
                continue
            if formula_wrong and observed["values"].shape == expected(case)[0].shape:
                continue
            through_base = case["layout"] in VIEW_LAYOUTS  # the caller's memory is the base
            want_x, want_base = expected(case)
            got = observed["base_values"] if through_base else observed["values"]
            want = want_base if through_base else want_x
            found = mismatch(got, want)
            if found is None:
                continue
            # The student passed a view: name it, and say the wrong values are its base's.
            tensor = _first_arg(function)
            seen: dict[str, Any] = {}
            if through_base:
                seen["in_base"] = phrase("in_base", tensor=tensor)
            if found["reason"] == "shape":
                findings.append(fail("shape_mismatch", function=function, tensor=tensor,
                                     where=_describe(case), expected=found["expected_shape"],
                                     got=found["actual_shape"], **seen))
            elif (why := unwritten(case, observed)) is not None:
                # The numbers may well be right: the caller's tensor never got them.
                findings.append(fail("not_written", function=function,
                                     tensor=_first_arg(function), where=_describe(case),
                                     why=why))
            else:
                findings.append(fail("values_mismatch", function=function, tensor=tensor,
                                     where=_describe(case), **found, **seen))
        return first_failure(findings)

    return judge


def unwritten(case: Case, observed: dict[str, Any]) -> Phrase | None:
    """Why the caller's memory holds what it held before the call, or None if it changed.

    Told apart from what the record shows, so the feedback names what broke the write: a
    returned tensor of another dtype (`.float()`, `.to(...)`), another new tensor (an
    out-of-place op, a rebound name), `x.data = ...` (the argument's memory replaced), or
    writes into a copy the function made and dropped (`.contiguous()`, `.reshape()`,
    `.clone()` copy a non-contiguous view)."""
    if not same_values(observed["base_values"], _original_base(case)):
        return None
    if observed["state_after"]["ptr"] != observed["state_before"]["ptr"]:
        return phrase("unwritten_data_replaced")
    dtype = observed.get("returned_dtype") or ""
    if not observed["returned_is_x"] and dtype and dtype != case["dtype"]:
        return phrase("unwritten_dtype", dtype=dtype, expected=case["dtype"])
    if not observed["returned_is_x"] and observed["returned_type"] == "Tensor":
        return phrase("unwritten_new_tensor")
    return phrase("unwritten_copy")  # or nothing written at all: the memory cannot tell


def _original_base(case: Case) -> torch.Tensor:
    from grader.labs.tensor_ops.inputs import build_base

    return build_base(case, "cpu")


def judge_allocation(function: str) -> Callable[[Evidence], Finding]:
    def judge(evidence: Evidence) -> Finding:
        for case, observed, problem in each_case(evidence, function,
                                                  _in("allocation")):
            if not problem.passed:
                return problem
            finding = judge_allocations(observed, function=function, where=_describe(case),
                                        tensor=_first_arg(function))
            if not finding.passed:
                return finding
        return PASS

    return judge


def judge_other_untouched(function: str) -> Callable[[Evidence], Finding]:
    def judge(evidence: Evidence) -> Finding:
        for case, observed, problem in each_case(evidence, function, _ordinary):
            if not problem.passed:
                return problem
            if not observed["other_untouched"]:
                return fail("input_modified", function=function, tensor=_second_arg(function),
                            where=_describe(case))
        return PASS

    return judge


REJECTED = {"clamp_": "clamp_accepts_no_bounds", "axpy_": "axpy_accepts_wider_x"}


def judge_rejects(function: str) -> Callable[[Evidence], Finding]:
    """A call torch's own op refuses raises here too, leaving the argument as it was."""
    def rule(case: Case, observed: dict[str, Any]) -> Finding | None:
        raised = observed["raised"]
        if raised is not None and raised["type"] == "NotImplementedError":
            return fail("not_implemented", function=function)
        if raised is None or "Exception" not in raised["bases"]:
            return fail(REJECTED[function], function=function,
                        x_shape=list(case.get("other_shape", [])),
                        y_shape=LAYOUTS[case["layout"]])
        if not observed["untouched"]:
            return fail("input_modified", function=function, tensor=_first_arg(function),
                        where="")
        return None

    # A missing function's record holds only its error: each_case reports it.
    return judge_cases(function, _in("rejects"), rule)


def _first_arg(function: str) -> str:
    return SIGNATURES[function][0][0]


def _second_arg(function: str) -> str:
    return {"axpy_": "x", "ema_update_": "new"}.get(function, "")


def validate_case(case: Case) -> None:
    """Build what judging `case` needs; raise if the case cannot be graded (hidden cases)."""
    from grader.checks.dtypes import DTYPES
    from grader.labs.tensor_ops.inputs import build_base

    function = case["function"]
    for key, allowed in (("layout", LAYOUTS), ("fill", FILLS), ("dtype", DTYPES)):
        if case.get(key, "normal") not in allowed:
            raise ValueError(f"{key} {case[key]!r} is not one of {', '.join(allowed)}")
    parameters = [name for name, _ in SIGNATURES[function]]
    unknown = sorted(set(case.get("kwargs", {})) - set(parameters[1:]))
    if unknown:
        raise ValueError(f"{function} takes no argument {unknown[0]!r}")
    if len(case["args"]) + len(case.get("kwargs", {})) > len(parameters):
        raise ValueError(f"too many arguments for {function}")
    view_of(build_base(case, "cpu"), case["layout"])
    build_other(case, "cpu")
    if case["group"] in ("values", "half", "views", "edges", "broadcast"):
        expected(case)  # the reference writes into x: a result of another shape raises here


def _checks() -> tuple[CheckSpec, ...]:
    checks: list[CheckSpec] = []
    for function in FUNCTIONS:
        # Any one passing shows the function did something to `x`: what a no-op (`return x`)
        # or a function that never writes `x` would "keep" earns nothing.
        did = (f"{function}.values", f"{function}.version_advances")
        checks += [
            CheckSpec(f"{function}.signature", "api",
                      signature_judge(function, kind="function", parameters=SIGNATURES[function]),
                      per_device=False),
            CheckSpec(f"{function}.returns_input", "identity", judge_identity(function),
                      shown_by=did),
            CheckSpec(f"{function}.same_memory", "storage", judge_storage(function),
                      shown_by=did),
            CheckSpec(f"{function}.version_advances", "version", judge_version(function)),
            CheckSpec(f"{function}.values", "numerics", judge_values(function, "values")),
            CheckSpec(f"{function}.half_precision", "numerics", judge_values(function, "half")),
            CheckSpec(f"{function}.through_views", "numerics", judge_values(function, "views")),
            CheckSpec(f"{function}.edge_shapes", "numerics", judge_values(function, "edges"),
                      shown_by=did),
            CheckSpec(f"{function}.no_full_size_temporary", "allocation",
                      judge_allocation(function), shown_by=did),
        ]
        if _second_arg(function):
            checks.append(CheckSpec(f"{function}.other_input_untouched", "side_effect",
                                    judge_other_untouched(function),
                                    shown_by=did))
        if function == "clamp_":
            checks.append(CheckSpec("clamp_.rejects_no_bounds", "api", judge_rejects(function)))
        if function == "axpy_":
            checks.append(CheckSpec("axpy_.broadcasts_x", "numerics",
                                    judge_values(function, "broadcast"), shown_by=did))
            checks.append(CheckSpec("axpy_.rejects_wider_x", "api", judge_rejects(function),
                                    shown_by=did))
    return tuple(checks)


LAB = Lab(
    name="tensor_ops",
    filename=FILENAME,
    functions=FUNCTIONS,
    checks=_checks(),
    cases=lab_cases,
    forbidden_package="",
    rubric_path=Path(__file__).with_name("rubric.toml"),
    validate_case=validate_case,
    extra_case_keys={"base_shape": [4, 6]},
    witnessed=witnessed,
    apply_witness=apply_witness,
    describe_case=lambda case: [_describe(case)],
    record_type=record_type,
    reproducer=reproduce.reproducer,
)
