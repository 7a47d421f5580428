"""The judging core (grader/checks/core.py): which checks a case that raised fails."""

from __future__ import annotations

from typing import Any

from grader.checks.core import every_case, judge_cases
from grader.checks.evidence import Evidence

RAISED = {"error": {"type": "RuntimeError", "message": "Output 0 of Unbind is a view and is "
                    "being modified inplace.", "traceback": ""}}
PLAN = ({"id": "leaf", "group": "forbidden"}, {"id": "unbind", "group": "forbidden"},
        {"id": "plain", "group": "allowed"})


def evidence(cases: dict[str, Any]) -> Evidence:
    return Evidence(api={}, static_policy=[], policy_calls=[], cases=cases, plan=PLAN)


def test_a_raise_costs_its_cases_own_check_not_the_ones_that_spare_it() -> None:
    """Issue 30: one case that raises fails the check that asks for its behaviour; a check
    with `spare_raised` judges the group's other cases, which ran."""
    seen = evidence({"leaf": {"ok": True}, "unbind": RAISED, "plain": {"ok": True}})
    rule = lambda case, observed: None  # noqa: E731
    assert not judge_cases("add_or_copy", every_case, rule)(seen).passed
    assert judge_cases("add_or_copy", every_case, rule, spare_raised=True)(seen).passed


def test_a_group_where_nothing_ran_still_fails_the_checks_that_spare_raises() -> None:
    """Nothing to judge is no pass: a function that raises on every forbidden case."""
    seen = evidence({"leaf": RAISED, "unbind": RAISED, "plain": {"ok": True}})
    rule = lambda case, observed: None  # noqa: E731
    finding = judge_cases("add_or_copy", every_case, rule, spare_raised=True)(seen)
    assert not finding.passed
    missing = evidence({"leaf": {"ok": True}, "plain": {"ok": True}})  # no record: not spared
    assert not judge_cases("add_or_copy", every_case, rule, spare_raised=True)(missing).passed
