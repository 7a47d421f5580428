"""What the class got right and wrong: the score distribution and the most failed checks
(what to re-teach on Monday)."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field

from grader.import_failure import import_line
from grader.models import Report

BUCKETS = 10


@dataclass(frozen=True)
class Standing:
    """What the gradebook and the class summary need of one report. A report is large (every
    check, worded); a class of thousands is summarised one report at a time."""

    student: str
    score: float
    max_score: float
    error: str  # why it was not graded, or why the file did not import (one line)
    points: dict[str, tuple[float, float]]  # per lab function: (score, max)
    failed: dict[str, str]  # check id -> check name
    integrity: tuple[str, ...] = ()  # the static integrity scan's findings
    status: str = "graded"  # graded, did not import, not gradable
    lost: dict[str, float] = field(default_factory=dict)  # check id -> points it lost

    @property
    def percent(self) -> float:
        return 100.0 * self.score / self.max_score if self.max_score else 0.0


GRADED, NOT_IMPORTED, NOT_GRADABLE = "graded", "did not import", "not gradable"


def standing(report: Report) -> Standing:
    points: dict[str, tuple[float, float]] = {}
    for check in report.checks:
        score, possible = points.get(check.function, (0.0, 0.0))
        points[check.function] = (score + check.score, possible + check.max_score)
    failed = [c for c in report.checks if c.status == "failed"]
    if report.error:
        status, error = NOT_GRADABLE, report.error
    elif report.import_error is not None:
        status, error = NOT_IMPORTED, import_line(report.import_error)
    else:
        status, error = GRADED, ""
    return Standing(student=report.student, score=report.score, max_score=report.max_score,
                    error=error, points=points, failed={c.id: c.name for c in failed},
                    integrity=tuple(report.integrity), status=status,
                    lost={c.id: c.max_score - c.score for c in failed})


MOST_FAILED_MIN = 2  # students who failed a check before the summary lists it


@dataclass(frozen=True)
class FailedCheck:
    check_id: str
    name: str
    students: int


@dataclass(frozen=True)
class ClassSummary:
    """Every student is exactly one of graded, did not import, not gradable: the three counts
    add up to `students`, and every output says them in these words. The mean and median are
    over the students whose code was run (graded, and did not import at 0 %); a not gradable
    row (empty, unreadable, ambiguous: no code was run) is left out of them."""

    students: int
    graded: int
    not_imported: int
    not_gradable: int
    mean_percent: float
    median_percent: float
    distribution: list[int] = field(default_factory=list)  # students per 10% bucket
    most_failed: list[FailedCheck] = field(default_factory=list)
    # Students whose source the integrity scan flagged, with its findings (instructor-only).
    flagged: list[tuple[str, list[str]]] = field(default_factory=list)

    @property
    def scored(self) -> int:
        """The students the mean is over."""
        return self.graded + self.not_imported


def summarize(standings: list[Standing], *, top: int = 10) -> ClassSummary:
    graded = [s for s in standings if s.status != NOT_GRADABLE]
    percents = [s.percent for s in graded]
    distribution = [0] * BUCKETS
    for percent in percents:
        distribution[min(int(percent // (100 / BUCKETS)), BUCKETS - 1)] += 1
    failed: Counter[str] = Counter()
    lost: Counter[str] = Counter()
    names: dict[str, str] = {}
    # A file that did not import fails every row alike: counted apart, not as mistakes.
    for student in (s for s in graded if s.status != NOT_IMPORTED):
        failed.update(student.failed.keys())
        lost.update(student.lost)
        names.update(student.failed)
    # By students affected, then by points lost; a check one student failed is that
    # student's story, not the class's.
    ranked = sorted((check_id for check_id, count in failed.items() if count >= MOST_FAILED_MIN),
                    key=lambda check_id: (-failed[check_id], -lost[check_id], check_id))
    not_imported = sum(s.status == NOT_IMPORTED for s in graded)
    return ClassSummary(
        students=len(standings),
        graded=len(graded) - not_imported,
        not_imported=not_imported,
        not_gradable=len(standings) - len(graded),
        mean_percent=statistics.fmean(percents) if percents else 0.0,
        median_percent=statistics.median(percents) if percents else 0.0,
        distribution=distribution,
        most_failed=[FailedCheck(check_id, names[check_id], failed[check_id])
                     for check_id in ranked[:top]],
        flagged=[(s.student, list(s.integrity)) for s in standings if s.integrity],
    )


def counts_text(summary: ClassSummary) -> str:
    """The one way every output counts a class: `13 students: 11 graded, 1 did not import,
    1 not gradable`."""
    return (f"{summary.students} students: {summary.graded} graded, {summary.not_imported} did "
            f"not import, {summary.not_gradable} not gradable")


def summary_text(summary: ClassSummary) -> str:
    """The summary as plain text (written to summary.txt and shown in the terminal)."""
    lines = [f"{counts_text(summary)}; mean {summary.mean_percent:.1f}%, median "
             f"{summary.median_percent:.1f}% over the {summary.scored} whose code ran (did not "
             "import: 0%; not gradable: left out)", "", "score distribution:"]
    width = max(summary.distribution, default=0) or 1
    for index, count in enumerate(summary.distribution):
        low = index * 100 // BUCKETS
        high = 100 if index == BUCKETS - 1 else (index + 1) * 100 // BUCKETS
        bar = "#" * round(40 * count / width)
        lines.append(f"  {low:3d}-{high:3d}%  {count:5d}  {bar}")
    if summary.most_failed:
        lines += ["", "most failed checks (students):"]
        lines += [f"  {f.students:5d}  {f.check_id}  {f.name}" for f in summary.most_failed]
    if summary.flagged:
        lines += ["", f"flagged for review by the integrity scan ({len(summary.flagged)}; "
                      "see each report's `integrity`):"]
        lines += [f"  {student}: {findings[0]}" + (f" (+{len(findings) - 1} more)"
                                                  if len(findings) > 1 else "")
                  for student, findings in summary.flagged]
    return "\n".join(lines) + "\n"
