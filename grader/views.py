"""Who reads an output decides what it shows of the hidden cases: decided here, for every
exporter and platform.

A student sees the visible checks and their points until the instructor releases the hidden
results (`--release`, or `release = true` in the hidden-cases file); course staff see
everything. A gradebook an LMS imports is the real grade, hidden points included, but its
feedback line names no hidden check to a student.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from grader.models import Report
from grader.summary import Standing, standing


@dataclass(frozen=True)
class Shown:
    """What one reader may see of a report: the report as shown, and how much is withheld."""

    report: Report
    withheld_checks: int = 0
    withheld_points: float = 0.0

    @property
    def withholds(self) -> bool:
        """Whether the shown total leaves points out (a report with an error has no rows)."""
        return bool(self.withheld_checks or self.withheld_points)


@dataclass(frozen=True, kw_only=True)
class View:
    """The reader of an output: a student (hidden results withheld until released) or staff."""

    staff: bool = False
    release: bool = False

    @property
    def shows_hidden(self) -> bool:
        return self.staff or self.release

    def of(self, report: Report) -> Shown:
        """`report` as this reader sees it: hidden checks, and their points, left out of a
        student's copy and its score until released."""
        hidden = [c for c in report.checks if c.hidden]
        if self.shows_hidden or not (hidden or report.hidden_max_score):
            return Shown(report)
        shown = [c for c in report.checks if not c.hidden]
        withheld = round(sum(c.max_score for c in hidden) + report.hidden_max_score, 6)
        visible = report.model_copy(update={
            "checks": shown,
            "score": round(sum(c.score for c in shown), 6),
            "max_score": round(report.max_score - withheld, 6),
            "hidden_max_score": 0.0,
        })
        return Shown(visible, len(hidden), withheld)

    def gradebook_standing(self, report: Report) -> Standing:
        """The report's standing for a gradebook an LMS imports: the whole score, and failed
        checks that name hidden ones only to a reader who may see them."""
        whole = standing(report)
        if self.shows_hidden:
            return whole
        hidden = {check.id for check in report.checks if check.hidden}
        return replace(whole, failed={check_id: name for check_id, name in whole.failed.items()
                                      if check_id not in hidden})


STUDENT = View()
STAFF = View(staff=True)
