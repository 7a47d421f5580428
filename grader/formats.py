"""Every format `check --format` writes, by name: the neutral ones (grader/exporters) and the
platforms' (grader/platforms/*). Each module offers `render(reports, *, view, lang)`; it is
imported only when its format is asked for, so `check` loads no exporter it does not print."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # nothing heavy at import: the CLI reads FORMATS for its --help
    from grader.exporters import Render
    from grader.models import Report
    from grader.views import View

FORMATS = {
    "json": "grader.exporters.report_json",
    "junit": "grader.exporters.junit",
    "gradescope": "grader.platforms.gradescope.results",
    "classroom50": "grader.platforms.classroom50.result",
    "github-classroom": "grader.platforms.github_classroom.result",
}


def renderer(name: str) -> Render:
    """The render function of format `name` (one of FORMATS)."""
    render: Render = importlib.import_module(FORMATS[name]).render
    return render


def render(name: str, reports: Sequence[Report], *, view: View, lang: str) -> str:
    return renderer(name)(reports, view=view, lang=lang)
