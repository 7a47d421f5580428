"""`check --explain CHECK_ID`: the reproducer of one failed check (docs/semantics.md#reproducers),
and the usage errors around it. Nothing here imports torch: an unknown id is told before
anything is graded."""

from __future__ import annotations

import difflib

from grader.errors import UsageError
from grader.labs import lab_rubric
from grader.models import CheckResult, Report


def known_check(lab: str, check_id: str) -> str:
    """`check_id` if lab `lab` has that check; else UsageError naming the closest ones."""
    ids = list(lab_rubric(lab).points)
    if check_id in ids:
        return check_id
    if check_id.partition("@")[0] in ids:
        raise UsageError(f"{check_id} is a hidden case's check: hidden cases have no reproducer "
                         "until your instructor releases them")
    close = difflib.get_close_matches(check_id, ids, n=3, cutoff=0.6)
    maybe = f"did you mean {' or '.join(close)}? " if close else ""
    raise UsageError(f"lab {lab} has no check {check_id!r}; {maybe}`inplace-grader checks "
                     f"--lab {lab}` lists its {len(ids)} check ids (a failed check's id is "
                     "shown beside it)")


def failed_check(report: Report, check_id: str) -> CheckResult:
    """The failed row of `check_id` a student may see, the CPU's first; UsageError where it
    passed, was skipped or is withheld."""
    rows = [check for check in report.checks if check.id == check_id]
    failed = sorted((check for check in rows if check.status == "failed" and not check.hidden),
                    key=lambda check: check.device != "cpu")
    if failed:
        return failed[0]
    if any(check.hidden for check in rows):
        raise UsageError(f"{check_id} is withheld until your instructor releases it")
    if rows and all(check.status == "skipped" for check in rows):
        raise UsageError(f"{check_id} was skipped here (no {rows[0].device} device)")
    raise UsageError(f"{check_id} passed: nothing to explain")
