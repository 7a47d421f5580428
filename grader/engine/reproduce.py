"""Step 2½: a reproducer for each failed check a student sees, found before the rows are
worded (engine/wording.py words them).

A check's verdict is its first failing case, but a judge names the case in words at most, so
the case is found again here the way hidden cases are judged: the check's judge given a plan
of one case at a time, over the same observations (labs/base.py `Lab.reproducer` builds the
code from it). Hidden rows never get one (their cases stay secret until released), nor do
rows that hold no property of the code: a runtime failure, a check not graded, a pass that
did not count (`not_shown`). Nothing here may fail a grading: a builder or judge that raises
costs that row its reproducer, nothing else.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from grader.checks.evidence import Case, Evidence
from grader.checks.findings import Finding
from grader.engine.context import GradingContext
from grader.engine.observe import Observed
from grader.engine.scoring import Scored
from grader.labs.base import CheckSpec
from grader.labs.reproducers import Reproducer

# Findings that are no property of the code a reproducer could assert.
NOT_REPRODUCED = frozenset({"not_shown", "not_graded_missing", "not_implemented",
                            "no_observation", "skipped_device"})


def wants_reproducer(row: Scored) -> bool:
    return (row.status == "failed" and not row.hidden and not row.case and not row.flagged
            and row.kind != "runtime" and row.finding.key not in NOT_REPRODUCED)


def reproducers(context: GradingContext, observed: Observed, rows: list[Scored]
                ) -> dict[tuple[str, str], Reproducer]:
    """The reproducer of each failed visible row that has one, by (row id, device)."""
    lab = context.lab
    wanted = [row for row in rows if wants_reproducer(row)]
    if lab.reproducer is None or not wanted or observed.import_problem is not None \
            or observed.job.api is None:
        return {}
    api, scan = observed.job.api["api"], observed.job.outcome.static
    checks = {check.id: check for check in lab.checks}
    judged = {(row.function, row.device) for row in rows if not row.skipped
              and (check := checks.get(row.check)) is not None and check.per_device}
    found: dict[tuple[str, str], Reproducer] = {}
    for row in wanted:
        try:
            check = checks[row.check]
            seen = _evidence(context, observed, api, scan.policy.get(row.function, []),
                             row.function, row.device if check.per_device else None, judged)
            located = None if seen is None else failing_case(check, seen, row.finding)
            built = None if located is None else lab.reproducer(check, *located)
        except Exception:  # a reproducer is an aid: never the reason a grading fails
            built = None
        if built is not None:
            found[(row.id, row.device)] = built
    return found


def _evidence(context: GradingContext, observed: Observed, api: dict[str, Any],
              static: list[str], function: str, device: str | None,
              judged: set[tuple[str, str]]) -> Evidence | None:
    """What the judges of `function` read on `device` (None: the first device whose task was
    judged, as for the checks judged once): the observations as scoring judged them, already
    checked, witnessed and metered (engine/outcomes.py `ran_tasks`), which only a task whose
    rows were judged has."""
    for task, (_, record) in zip(observed.visible, observed.job.tasks, strict=True):
        if task.function != function or (function, task.device) not in judged \
                or (device is not None and task.device != device) or record is None:
            continue
        return Evidence(api=api, static_policy=static, policy_calls=[],
                        cases=record["observations"]["cases"],
                        plan=tuple(context.lab.cases(function)))
    return None


def failing_case(check: CheckSpec, evidence: Evidence, finding: Finding
                 ) -> tuple[Case, Finding] | None:
    """The first case on which `check` fails alone, with its finding: one that fails as the
    row did (the same key) if any, else the first that fails at all."""
    first: tuple[Case, Finding] | None = None
    for case in evidence.plan:
        if case["id"] not in evidence.cases:
            continue
        alone = check.judge(replace(evidence, plan=(case,)))
        if alone.passed:
            continue
        if alone.key == finding.key:
            return case, alone
        first = first or (case, alone)
    return first
