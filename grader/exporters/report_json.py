"""The report as JSON: what `check --format json` prints and `grade` keeps per student
(`inplace-grader schema` prints its JSON Schema)."""

from __future__ import annotations

from collections.abc import Sequence

from grader.models import Report
from grader.views import View


def render(reports: Sequence[Report], *, view: View, lang: str) -> str:
    """One report as one JSON object (a class: one object per line), as `view` may see it.
    The report is language-neutral data: `lang` went into its messages when it was graded."""
    del lang
    if len(reports) == 1:
        return view.of(reports[0]).report.model_dump_json(indent=2) + "\n"
    return "".join(view.of(report).report.model_dump_json() + "\n" for report in reports)
