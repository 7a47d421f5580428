"""Fair scoring's rules over scored rows (grader/engine/scoring.py), without a sandbox."""

from __future__ import annotations

from grader.checks.findings import Finding, fail
from grader.engine.scoring import Scored, calls_into_failures

PASSED = Finding(True, "passed", {})
CALLS = {"SGD.zero_grad": ["zero_grad"], "Adam.zero_grad": ["zero_grad"]}


def row(check_id: str, finding: Finding, *, points: float = 2.0) -> Scored:
    function = check_id.rsplit(".", 1)[0] if check_id.count(".") > 1 else check_id.split(".")[0]
    return Scored(id=check_id, check=check_id, function=function, kind="identity",
                  device="cpu", finding=finding, score=points if finding.passed else 0.0,
                  max_score=points)


def test_a_method_failing_only_through_a_broken_callee_costs_nothing_of_its_own() -> None:
    """Issue 30: one bug in `zero_grad` costs `zero_grad`'s checks, not `SGD.zero_grad`'s
    and `Adam.zero_grad`'s too. The follow-on row stays failed, blamed on the callee."""
    broken = fail("grad_replaced", function="zero_grad")
    rows = [row("zero_grad.keeps_grad_object", broken),
            row("zero_grad.exact_zeros", PASSED),
            row("SGD.zero_grad", broken), row("Adam.zero_grad", broken),
            row("SGD.state_kept", fail("state_replaced", function="SGD"))]
    settled = {r.id: r for r in calls_into_failures(
        rows, CALLS, shown_by=frozenset({"zero_grad.exact_zeros"}))}
    for method in ("SGD.zero_grad", "Adam.zero_grad"):
        assert settled[method].status == "failed"
        assert settled[method].blame is not None
        assert settled[method].blame.key == "calls_failing"
        assert settled[method].score == settled[method].max_score == 2.0
    lost = sum(r.max_score - r.score for r in settled.values())
    assert lost == 2.0 + 2.0  # zero_grad's own check, and SGD's own mistake: nothing more
    assert settled["SGD.state_kept"].score == 0.0  # not a call into a failing function


def test_calling_a_callee_not_shown_to_work_still_costs() -> None:
    """A `zero_grad` that changes nothing (issue 26) pays for nothing: the classes that
    delegate to it are blamed on it, and lose their points as a body of `pass` would."""
    rows = [row("zero_grad.exact_zeros", fail("wrong_values", function="zero_grad")),
            row("SGD.zero_grad", fail("wrong_values", function="SGD"))]
    settled = {r.id: r for r in calls_into_failures(
        rows, CALLS, shown_by=frozenset({"zero_grad.exact_zeros"}))}
    assert settled["SGD.zero_grad"].blame is not None
    assert settled["SGD.zero_grad"].score == 0.0
