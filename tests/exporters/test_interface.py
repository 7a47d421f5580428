"""Every format behind the one interface, render(reports, *, view, lang) -> str, and the
view deciding what each shows of hidden results (grader/views.py)."""

from __future__ import annotations

import importlib
import inspect

import pytest

from grader.engine import CheckOptions, check_submission
from grader.formats import FORMATS, renderer
from grader.models import Report
from grader.views import STAFF, STUDENT, View
from tests.conftest import ROOT, SharedSandboxes

NEUTRAL = ["grader.exporters.text", "grader.exporters.report_json", "grader.exporters.junit",
           "grader.exporters.gradebook", "grader.exporters.html_report"]
STAFF_ONLY = ["grader.exporters.html_report"]
# The formats that leave a withheld check out of the student's copy. Gradescope keeps it and
# gives it the instructor's visibility instead (tests/platforms/test_gradescope.py).
LEAVE_OUT = ["grader.exporters.text", "grader.exporters.report_json", "grader.exporters.junit",
             "grader.platforms.classroom50.result", "grader.platforms.github_classroom.result"]


@pytest.fixture(scope="module")
def report(sandboxes: SharedSandboxes) -> Report:
    """A real report with one failed check made hidden (as a hidden case's check is)."""
    buggy = ROOT / "tests" / "submissions" / "optim" / "sgd_step_data_assign.py"
    graded = check_submission(buggy, lab="optim", options=CheckOptions(device="cpu"),
                              sandbox=sandboxes("optim"))
    failed = next(c for c in graded.checks if c.status == "failed")
    hidden = failed.model_copy(update={"hidden": True, "id": "sgd_step.secret_probe",
                                       "name": "sgd_step passes the secret probe"})
    return graded.model_copy(update={"checks": [*graded.checks, hidden]})


@pytest.mark.parametrize("module", sorted({*FORMATS.values(), *NEUTRAL}))
def test_each_format_renders_reports_for_a_view_in_a_language(module: str,
                                                              report: Report) -> None:
    render = importlib.import_module(module).render
    assert list(inspect.signature(render).parameters) == ["reports", "view", "lang"]
    views = (STUDENT, STAFF)
    if module in STAFF_ONLY:  # a page that names students beside their findings
        with pytest.raises(ValueError, match="course staff"):
            render([report], view=STUDENT, lang="en")
        views = (STAFF,)
    for view in views:
        for lang in ("en", "ko"):
            text = render([report], view=view, lang=lang)
            assert isinstance(text, str) and text.strip(), (module, view, lang)


@pytest.mark.parametrize("module", LEAVE_OUT)
def test_a_student_sees_a_hidden_check_only_once_released(module: str, report: Report) -> None:
    render = importlib.import_module(module).render
    secret = "the secret probe"
    assert secret not in render([report], view=STUDENT, lang="en")
    assert secret in render([report], view=View(release=True), lang="en")
    assert secret in render([report], view=STAFF, lang="en")


def test_the_check_command_offers_every_named_format() -> None:
    """`check --format` lists exactly the text report and the registry's formats, and each
    name leads to a module's render."""
    from grader.cli import check

    (option,) = [p for p in check.params if p.name == "output_format"]
    assert list(option.type.choices) == ["text", *FORMATS]
    assert all(renderer(name) is importlib.import_module(FORMATS[name]).render
               for name in FORMATS)
