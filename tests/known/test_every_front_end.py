"""Every lab through every front end: a lab is a folder of data over one judging core, so a lab
that grades through `check` must grade through the class run, its report page, the LMS formats,
the builders and the notebook kernel with no change to any of them.

For each lab: its reference solution, its stub and one known mistake (the first file of
tests/submissions/<lab>/ that fails something), graded through each route; the solution earns
full marks everywhere, the mistake loses points everywhere, each format valid by its schema.
"""

from __future__ import annotations

import csv
import json
import shutil
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from grader.batch import BatchOptions, grade_class
from grader.engine import CheckOptions
from grader.grades import load_reports
from grader.labs import LAB_FILES
from grader.models import Report
from tests.conftest import ROOT, full_marks, grader_cli
from tests.known.test_known_submissions import CASES, expected_failures

LABS = sorted(LAB_FILES)
SCHEMAS = ROOT / "tests" / "platforms"


def solution(lab: str) -> Path:
    return ROOT / "solutions" / lab / LAB_FILES[lab]


def stub(lab: str) -> Path:
    return ROOT / "assignments" / lab / LAB_FILES[lab]


def mistake(lab: str) -> Path:
    return next(p for p in CASES if p.parent.name == lab and expected_failures(p))


def schema(name: str) -> dict:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


def _formatted(path: Path, lab: str, output_format: str, *, right: bool) -> str:
    ran = grader_cli("check", str(path), "--lab", lab, "--device", "cpu", "--format",
                     output_format, "--lang", "en")
    assert ran.returncode == (0 if right else 1), ran.stderr[-2000:]
    return ran.stdout


def _junit_failures(text: str) -> int:
    root = ET.fromstring(text)
    suites = [root] if root.tag == "testsuite" else list(root)
    return sum(int(suite.get("failures", 0)) + int(suite.get("errors", 0)) for suite in suites)


def _github_points(text: str) -> tuple[float, float]:
    """(earned, possible) as GitHub Classroom's reporter adds up a runner's result: every
    test's `score` against its `max_score`."""
    result = json.loads(text)
    jsonschema.validate(result, schema("github_classroom_result"))
    return sum(test["score"] for test in result["tests"]), result["max_score"]


@pytest.mark.slow
@pytest.mark.usefixtures("shared_check_sandboxes")
@pytest.mark.parametrize("lab", LABS)
def test_each_report_format_gives_the_solution_full_marks_and_the_mistake_less(
        lab: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file is graded once and its report written in every format (a format is how a
    report is written, not how it is graded)."""
    import grader.engine

    grade = grader.engine.check_submission
    graded: dict[tuple[str, str], Report] = {}

    def once(path: Path, **kwargs: Any) -> Report:
        key = (str(path), repr(kwargs.get("options")))
        if key not in graded:
            graded[key] = grade(path, **kwargs)
        return graded[key]

    monkeypatch.setattr(grader.engine, "check_submission", once)
    full = full_marks(lab)
    for path, right in ((solution(lab), True), (mistake(lab), False)):
        gradescope = json.loads(_formatted(path, lab, "gradescope", right=right))
        jsonschema.validate(gradescope, schema("gradescope_results"))
        assert sum(test.get("max_score", 0) for test in gradescope["tests"]) == full
        assert (gradescope["score"] == full) is right, (path.name, gradescope["score"])
        classroom = json.loads(_formatted(path, lab, "classroom50", right=right))
        jsonschema.validate(classroom, schema("classroom50_result"))
        assert classroom["max-score"] > 0
        assert (classroom["score"] == classroom["max-score"]) is right, path.name
        failures = _junit_failures(_formatted(path, lab, "junit", right=right))
        assert (failures == 0) is right, path.name
        earned, possible = _github_points(_formatted(path, lab, "github-classroom",
                                                     right=right))
        assert possible > 0 and (earned == possible) is right, (path.name, earned, possible)
    assert len(graded) == 2


@pytest.mark.slow
@pytest.mark.usefixtures("shared_batch_workers")
@pytest.mark.parametrize("lab", LABS)
def test_a_class_of_each_lab_is_graded_with_its_report_page(lab: str, tmp_path: Path) -> None:
    subs = tmp_path / "class"
    subs.mkdir()
    for student, path in (("right", solution(lab)), ("stub", stub(lab)),
                          ("wrong", mistake(lab))):
        shutil.copy(path, subs / f"{student}.py")
    out = tmp_path / "out"
    result = grade_class(subs, options=BatchOptions(
        lab=lab, out=out, workers=1, check=CheckOptions(device="cpu", lang="en")))
    assert result.students == 3 and not result.errors
    scores = {report.student: report.score for report in load_reports(out)}
    assert scores["right"] == full_marks(lab) > scores["wrong"] > scores["stub"] == 0
    with (out / "gradebook.csv").open() as handle:
        assert {row["student"] for row in csv.DictReader(handle)} == {"right", "stub", "wrong"}
    page = (out / "report.html").read_text()
    assert all(f">{student}<" in page for student in ("right", "stub", "wrong")), "a row is missing"


@pytest.mark.slow
@pytest.mark.usefixtures("wheel_built_once")
@pytest.mark.parametrize("lab", LABS)
def test_each_builder_writes_its_lab(lab: str, tmp_path: Path) -> None:
    """Gradescope's zip, Classroom 50's and PrairieLearn's graders, nbgrader's source notebook,
    from the lab's name alone (hidden cases where the platform takes them)."""
    hidden = str(ROOT / "examples" / lab / "hidden.toml")
    commands = {
        "autograder.zip": ["gradescope", "build", "--lab", lab, "--hidden", hidden],
        "classroom": ["classroom50", "init", "--lab", lab],
        "prairielearn": ["prairielearn", "init", "--lab", lab, "--hidden", hidden],
        "source": ["nbgrader", "source", "--lab", lab, "--hidden", hidden],
    }
    for target, command in commands.items():
        ran = grader_cli(*command, "-o", str(tmp_path / target))
        assert ran.returncode == 0, (command, ran.stderr[-2000:])
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        assert any(lab in archive.read(name).decode(errors="replace")
                   for name in archive.namelist() if not name.endswith(".whl"))
    for folder in ("classroom", "prairielearn", "source"):
        written = "\n".join(p.read_text(errors="replace") for p in (tmp_path / folder).rglob("*")
                            if p.is_file() and p.suffix != ".whl")
        assert lab in written, folder


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_the_notebook_kernel_grades_each_function_of_each_lab(
        lab: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """What a notebook's test cell runs (platforms/nbgrader/kernel.py): with the solution's
    code as the kernel's history, each function earns its points."""
    from grader.labs import get_lab
    from grader.platforms.nbgrader import kernel

    monkeypatch.setattr(kernel, "_input_history", lambda: [solution(lab).read_text()])
    points = get_lab(lab).rubric().points
    for function in get_lab(lab).functions:
        own = sum(value for check, value in points.items() if check.startswith(f"{function}."))
        assert kernel.grade_function(lab, function, lang="en") == own, function
    assert "not implemented" not in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.usefixtures("shared_batch_workers", "shared_cluster_sandboxes")
@pytest.mark.parametrize("lab", LABS)
def test_a_class_of_each_lab_is_graded_on_a_cluster_as_here(lab: str, tmp_path: Path) -> None:
    """`grade --cluster local:1` (Dask's workers in this process) gives each lab's class the
    verdicts a local run gives."""
    pytest.importorskip("distributed", reason="the cluster extra is not installed")
    from grader.batch.cluster import ClusterExecutor

    subs = tmp_path / "class"
    subs.mkdir()
    shutil.copy(solution(lab), subs / "right.py")
    shutil.copy(mistake(lab), subs / "wrong.py")
    options = {"lab": lab, "workers": 1, "check": CheckOptions(device="cpu", lang="en")}
    grade_class(subs, options=BatchOptions(out=tmp_path / "here", **options))
    grade_class(subs, options=BatchOptions(out=tmp_path / "there", **options),
                executor=ClusterExecutor("local:1"))
    here, there = (sorted((r.student, r.score, [c.status for c in r.checks])
                          for r in load_reports(tmp_path / where)) for where in ("here", "there"))
    assert here == there and here[0][1] == full_marks(lab) > here[1][1]
