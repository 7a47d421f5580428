"""The class gradebook as CSV: one row per student, one column per lab function.

Written with the csv module (a comma or quote in a name cannot corrupt it), rebuilt from the
per-student JSON reports so it always matches them.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

from grader.models import Report

FIXED_COLUMNS = ["student", "score", "max_score", "percent", "status", "error"]


def function_points(report: Report) -> dict[str, tuple[float, float]]:
    """(score, max) per lab function."""
    points: dict[str, tuple[float, float]] = {}
    for check in report.checks:
        score, possible = points.get(check.function, (0.0, 0.0))
        points[check.function] = (score + check.score, possible + check.max_score)
    return points


def gradebook_csv(reports: Iterable[Report], *, functions: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(FIXED_COLUMNS + [f"{f} ({m})" for f in functions for m in ("score", "max")])
    for report in sorted(reports, key=lambda r: r.student):
        points = function_points(report)
        percent = 100.0 * report.score / report.max_score if report.max_score else 0.0
        row: list[object] = [report.student, f"{report.score:g}", f"{report.max_score:g}",
                             f"{percent:.1f}", "error" if report.error else "graded",
                             report.error]
        for function in functions:
            score, possible = points.get(function, (0.0, 0.0))
            row += [f"{score:g}", f"{possible:g}"]
        writer.writerow(row)
    return buffer.getvalue()
