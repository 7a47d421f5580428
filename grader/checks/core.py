"""The judging core every lab's checks table stands on: a check reads the cases its selector
picks, and applies one rule to each case's observation; the first failure wins.

The pre-pass is the same for every lab, so it lives here once: a case with no observation, or
whose call raised, fails the checks that read that case, and only those (`each_case`); a
check may leave a raised case to the check that asks for its behaviour (`spare_raised`). Rules
that several labs share (storage kept, version advanced, no history, values close) take the
tensor's name and the case's words, so feedback names what was judged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch

from grader.checks.errors import error_finding
from grader.checks.evidence import Case, Evidence
from grader.checks.findings import PASS, Finding, fail
from grader.checks.numerics import mismatch, tolerance
from grader.checks.tensors import same_values

Selector = Callable[[Case], bool]
Rule = Callable[[Case, dict[str, Any]], Finding | None]


def every_case(case: Case) -> bool:
    return True


def each_case(evidence: Evidence, function: str, select: Selector = every_case, *,
              allow_error: bool = False) -> Iterator[tuple[Case, dict[str, Any], Finding]]:
    """(case, observation, problem) for each selected case of the plan, in order: `problem`
    fails where the case has no observation or its call raised (unless `allow_error`: the
    rule judges the error itself), and passes otherwise."""
    for case in evidence.planned(select):
        observed = evidence.cases.get(case["id"])
        if observed is None:
            yield case, {}, fail("no_observation", function=function, case=case["id"])
        elif observed.get("error") and not allow_error:
            yield case, observed, error_finding(observed["error"], function=function,
                                                case_id=case["id"])
        else:
            yield case, observed, PASS


def judge_cases(function: str, select: Selector, rule: Rule, *,
                allow_error: bool = False, spare_raised: bool = False
                ) -> Callable[[Evidence], Finding]:
    """A judge that applies `rule` to each case `select` picks; the first failure wins.

    `spare_raised`: a case whose call raised is not this check's to fail where another case
    of its group (`case["group"]`) ran: the check that asks for that case's behaviour (one
    without `spare_raised`) is failed by it, and pays once. See NOTE: [a raise costs its
    case's own check]."""
    def judge(evidence: Evidence) -> Finding:
        judged = list(each_case(evidence, function, select, allow_error=allow_error))
        ran = {case.get("group") for case, _, problem in judged if problem.passed}
        for case, observed, problem in judged:
            if not problem.passed and spare_raised and case.get("group") in ran and (
                    problem.key != "no_observation"):
                continue
            if not problem.passed:
                return problem
            finding = rule(case, observed)
            if finding is not None and not finding.passed:
                return finding
        return PASS

    return judge


# NOTE: [a raise costs its case's own check]
# Autograd's add_or_copy reads each forbidden case (a leaf, a view of a leaf, an unbind output,
# a view made under no_grad) in five checks. Code that misses one refusal raises on that case
# alone, and failing all five for it cost 8 of 15 points for one missed case (issue 30). The
# rule: a raise fails the check that asks what the function does on that case (falls back,
# writes in place); checks of what follows from it (the pair returned, its values, the graph,
# `t` untouched) spare it while another case of the same group ran and can be judged. Where
# no case of the group ran (the function never falls back, or always raises) they fail as
# before: there is nothing to judge them on, and a pass would pay for nothing.

# --- shared rules ------------------------------------------------------------------------------

def storage_kept(function: str, tensor: str, before: dict[str, Any], after: dict[str, Any],
                 alias_values: torch.Tensor, values: torch.Tensor, *,
                 where: Any = "") -> Finding | None:
    """The same memory, and that memory (seen through an alias taken before the call) holds
    what the tensor now holds: a swap that reuses the address fails too."""
    if after["ptr"] != before["ptr"]:
        return fail("storage_replaced", function=function, tensor=tensor, where=where)
    if not same_values(alias_values, values):
        return fail("writes_elsewhere", function=function, tensor=tensor)
    return None


def version_advanced(function: str, tensor: str, before: dict[str, Any],
                     after: dict[str, Any], *, where: Any = "") -> Finding | None:
    """autograd can see the write: the tensor's version counter moved."""
    if after["version"] <= before["version"]:
        return fail("version_unchanged", function=function, tensor=tensor,
                    version=before["version"], where=where)
    return None


def plain_leaf(function: str, tensor: str, after: dict[str, Any]) -> Finding | None:
    """Still a leaf that requires grad, with no history: the write was made under no_grad."""
    if not (after["is_leaf"] and after["requires_grad"] and after["grad_fn"] is None):
        return fail("param_history", function=function, tensor=tensor,
                    is_leaf=after["is_leaf"], requires_grad=after["requires_grad"],
                    grad_fn=after["grad_fn"] or "None")
    return None


# NOTE: [shown to compute]
# A check of what a function keeps (its storage, the object it returns, no temporary, the
# other input untouched, ...) pays only where the function was shown to do its job
# (CheckSpec.shown_by): otherwise `return x` would "keep its storage". A version bump shows a
# write, not a computation: `x.mul_(1)`, `add_(0)` or `copy_` of the input onto itself write
# and change nothing, and must earn what `return x` earns (issue 26). So the version checks,
# which the gates name, pass only where some case shows the function computing
# (`computes`), and one wrong corner (an extreme fill, lo > hi) costs only its own check:
# a case the function gets wrong leaves the others to show it at work.

def computes(before: torch.Tensor, after: torch.Tensor, want: torch.Tensor) -> bool | None:
    """Whether a call was right on part of what was asked: `before` the caller's values,
    `after` what the call left there, `want` the reference's.

    Judged on the elements the reference changes (where `before` is not close to `want`, with
    the tolerances of `values_close`): more than half of them are right, nearer `want` than
    they were, or moved by as much as the reference moves them (a sign mistake: `p + lr * g`);
    NaN is none of these. A write that changes nothing moves nothing and shows nothing. A
    formula that is wrong but heads the right way (a biased variance, a missing eps) still
    shows the function at work, so its mistake costs its values checks alone. None where the
    reference changes nothing: such a case cannot tell."""
    if tuple(after.shape) != tuple(want.shape) or tuple(before.shape) != tuple(want.shape):
        return False
    rtol, atol = tolerance(want.dtype)
    b, a, w = (t.detach().to("cpu", torch.float64) for t in (before, after, want))
    allowed = atol + rtol * w.abs()

    def close(t: torch.Tensor) -> torch.Tensor:
        return (((t - w).abs() <= allowed) | (torch.isnan(t) & torch.isnan(w))
                | (torch.isinf(w) & (t == w)))

    changed = ~close(b)
    count = int(changed.sum())
    if count == 0:
        return None
    error_before = (b - w).abs().nan_to_num(nan=math.inf)
    # NaN compares False: never nearer, never the right size.
    nearer = close(a) | ((a - w).abs() < error_before)
    right_size = ((a - b).abs() - (w - b).abs()).abs() <= allowed
    return 2 * int(((nearer | right_size) & changed).sum()) > count


def shown(verdicts: Iterable[bool | None]) -> bool:
    """Some case shows the function computing (`computes`); or none of them can tell (each
    reference changes nothing, as a hidden case's may), so the gate has nothing to ask.
    Read lazily, up to the first case that shows it: honest code is judged on one case."""
    told = False
    for verdict in verdicts:
        if verdict:
            return True
        told = told or verdict is not None
    return not told


def unless_computing(judge: Callable[[Evidence], Finding],
                     verdicts: Callable[[Evidence], Iterable[bool | None]], *,
                     function: str, tensor: str) -> Callable[[Evidence], Finding]:
    """`judge`, failed where it passes but no case shows `function` computing: what a gate
    names (a version check) must show more than a write. See NOTE: [shown to compute]."""
    def gated(evidence: Evidence) -> Finding:
        finding = judge(evidence)
        if finding.passed and not shown(verdicts(evidence)):
            return fail("write_changes_nothing", function=function, tensor=tensor)
        return finding

    return gated


def values_close(actual: torch.Tensor, expected: torch.Tensor, *, tensor: str,
                 where: Any = "", function: str = "") -> Finding | None:
    """`assert_close`-style numbers for the actual's dtype (checks/numerics.py), the shape
    first."""
    found = mismatch(actual, expected.to(actual.dtype))
    if found is None:
        return None
    if found["reason"] == "shape":
        return fail("shape_mismatch", tensor=tensor, where=where, function=function,
                    expected=found["expected_shape"], got=found["actual_shape"])
    return fail("values_mismatch", tensor=tensor, where=where, function=function, **found)
