"""The readable feedback file a student gets from a batch run: the `check` report as text."""

from __future__ import annotations

import io

from rich.console import Console

from grader.models import Report
from grader.render import render_text


def feedback_text(report: Report, *, lang: str) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, no_color=True, force_terminal=False,
                      highlight=False)
    render_text(report, console, lang=lang)
    return buffer.getvalue()
