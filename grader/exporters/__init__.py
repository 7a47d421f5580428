"""Neutral formats, one module each: text (feedback files), JSON (the report), JUnit, CSV
gradebooks (gradebook.py, lms_csv.py) and the class report (html_report.py).

A format that writes reports offers one interface, `render(reports, *, view, lang) -> str`
(Render below): `view` (grader.views) says who reads the output, which decides what it shows
of the hidden cases. grader/formats.py names every format `check --format` writes, these and
the platforms' own. The report models know no format.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from grader.models import Report
    from grader.views import View


class Render(Protocol):
    """Reports in, the format's text out."""

    def __call__(self, reports: Sequence[Report], *, view: View, lang: str) -> str: ...
