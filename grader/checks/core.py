"""The judging core every lab's checks table stands on: a check reads the cases its selector
picks, and applies one rule to each case's observation; the first failure wins.

The pre-pass is the same for every lab, so it lives here once: a case with no observation, or
whose call raised, fails the checks that read that case, and only those (`each_case`). Rules
that several labs share (storage kept, version advanced, no history, values close) take the
tensor's name and the case's words, so feedback names what was judged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

from grader.checks.errors import error_finding
from grader.checks.findings import PASS, Finding, fail
from grader.checks.numerics import mismatch
from grader.checks.tensors import same_values
from grader.labs.base import Case, Evidence

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
                allow_error: bool = False) -> Callable[[Evidence], Finding]:
    """A judge that applies `rule` to each case `select` picks; the first failure wins."""
    def judge(evidence: Evidence) -> Finding:
        for case, observed, problem in each_case(evidence, function, select,
                                                 allow_error=allow_error):
            if not problem.passed:
                return problem
            finding = rule(case, observed)
            if finding is not None and not finding.passed:
                return finding
        return PASS

    return judge


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


def values_close(actual: torch.Tensor, expected: torch.Tensor, *, tensor: str,
                 where: Any = "", function: str = "") -> Finding | None:
    """`assert_close`-style numbers for the actual's dtype (checks/numerics.py), the shape
    first."""
    found = mismatch(actual, expected.to(actual.dtype))
    if found is None:
        return None
    if found["reason"] == "shape":
        return fail("shape_mismatch", tensor=tensor, where=where,
                    expected=found["expected_shape"], got=found["actual_shape"])
    return fail("values_mismatch", tensor=tensor, where=where, function=function, **found)
