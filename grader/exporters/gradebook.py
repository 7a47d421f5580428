"""The class gradebook as CSV: one row per student, one column per lab function.

`status` tells apart a graded file, one that did not import (graded 0, the error beside it)
and one that could not be graded at all (empty, missing, unreadable: the reason beside it);
every row has the lab's maxima, whatever its status.

Written with the csv module (a comma or quote in a name cannot corrupt it), its text cells made
safe from spreadsheet formulas (spreadsheet.py), rebuilt from the per-student JSON reports so it
always matches them.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from grader.exporters.spreadsheet import safe_row
from grader.labs import get_lab
from grader.models import Report
from grader.summary import Standing
from grader.views import View

FIXED_COLUMNS = ["student", "score", "max_score", "percent", "status", "error"]


def gradebook_csv(standings: Iterable[Standing], *, functions: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(safe_row(FIXED_COLUMNS + [f"{f} ({m})" for f in functions
                                             for m in ("score", "max")]))
    for student in sorted(standings, key=lambda s: s.student):
        row: list[object] = [student.student, f"{student.score:g}", f"{student.max_score:g}",
                             f"{student.percent:.1f}", student.status, student.error]
        for function in functions:
            score, possible = student.points.get(function, (0.0, 0.0))
            row += [f"{score:g}", f"{possible:g}"]
        writer.writerow(safe_row(row))
    return buffer.getvalue()


def render(reports: Sequence[Report], *, view: View, lang: str) -> str:
    """The gradebook of these reports (one lab's), in the exporters' interface; the language
    is the reports' own (a status and an error are data)."""
    del lang
    labs = {report.lab for report in reports}
    if len(labs) > 1:
        raise ValueError(f"a gradebook is of one lab, not {sorted(labs)}")
    functions = list(get_lab(labs.pop()).functions) if labs else []
    return gradebook_csv([view.gradebook_standing(report) for report in reports],
                         functions=functions)
