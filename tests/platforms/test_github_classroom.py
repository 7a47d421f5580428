"""GitHub Classroom: the runner result of real graded submissions, validated against the shape
the runner actions write (github_classroom_result.schema.json), added up as the reporter adds
it, and produced by the documented workflow step as GitHub Actions runs it."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import jsonschema
import pytest
import torch

from grader.engine import CheckOptions, check_submission
from grader.hidden import load_hidden_file
from grader.models import CheckResult, Report
from grader.platforms.github_classroom.result import render, result_json
from grader.views import STAFF, STUDENT, View
from tests.conftest import ROOT, SOLUTION, SharedSandboxes

SCHEMA = json.loads(Path(__file__).with_name("github_classroom_result.schema.json").read_text())
KNOWN = ROOT / "tests" / "submissions" / "optim"
DOCS = ROOT / "docs" / "github-classroom.md"
REPORTS = ["solution", "buggy", "hidden", "import", "empty"]


def encoded(report: Report, *, view: View = STUDENT, lang: str = "en") -> str:
    """What the workflow's step writes as its `result` output (docs/github-classroom.md:
    `... | base64 -w0`): base64 of the JSON `check` prints."""
    return base64.b64encode(render([report], view=view, lang=lang).encode("utf-8")).decode()

def reporter_points(runners: str, env: Mapping[str, str]) -> tuple[float, float]:
    """The "Points X/Y" the reporter posts, computed as its source does.

    classroom-resources/autograding-grading-reporter src/main.js: for each id of the
    comma-separated `runners`, base64-decode `process.env[id.trim().toUpperCase() + "_RESULTS"]`
    and parse it. src/notify-classroom.js: skip a runner whose `max_score` is falsy, else add
    its `max_score` to the maximum and every test's `score` to the total."""
    total, maximum = 0.0, 0.0
    for runner in runners.split(","):
        text = base64.b64decode(env[f"{runner.strip().upper()}_RESULTS"]).decode("utf-8")
        results = json.loads(text)
        if not results.get("max_score"):
            continue
        maximum += results["max_score"]
        for test in results["tests"]:
            total += test["score"]
    return total, maximum


def valid(result: dict) -> dict:
    jsonschema.validate(result, SCHEMA)
    return result


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory,
           sandboxes: SharedSandboxes) -> dict[str, Report]:
    """Each kind of submission graded once: correct, buggy, buggy with its failing checks
    hidden, a file that does not import, an empty file."""
    folder = tmp_path_factory.mktemp("github_classroom")
    hidden = folder / "hidden.toml"
    hidden.write_text('lab = "optim"\nhide = ["sgd_step.*"]\n')
    broken = folder / "broken" / "optimizer.py"
    broken.parent.mkdir()
    source = SOLUTION.read_text()
    broken.write_text(source.replace("-> None:", "-> None", 1))
    assert broken.read_text() != source
    empty = folder / "empty" / "optimizer.py"
    empty.parent.mkdir()
    empty.write_text("\n")
    buggy = KNOWN / "sgd_step_data_assign.py"
    cases = {"solution": (SOLUTION, None), "buggy": (buggy, None),
             "hidden": (buggy, load_hidden_file(hidden)), "import": (broken, None),
             "empty": (empty, None)}
    sandbox = sandboxes("optim")
    return {name: check_submission(path, lab="optim", sandbox=sandbox,
                                   options=CheckOptions(device="cpu", hidden=secret))
            for name, (path, secret) in cases.items()}


@pytest.mark.parametrize("name", REPORTS)
def test_each_result_has_the_runners_shape_and_its_base64_decodes_to_it(
        graded: dict[str, Report], name: str) -> None:
    report = graded[name]
    result = valid(result_json(report))
    assert json.loads(base64.b64decode(encoded(report))) == result
    assert json.loads(render([report], view=STUDENT, lang="en")) == result
    assert valid(result_json(report, view=STAFF, lang="ko"))


@pytest.mark.parametrize("name", REPORTS)
def test_the_reporter_adds_up_the_students_score(graded: dict[str, Report], name: str) -> None:
    shown = STUDENT.of(graded[name]).report
    result = result_json(graded[name])
    assert sum(test["score"] for test in result["tests"]) == pytest.approx(shown.score)
    assert result["max_score"] == pytest.approx(shown.max_score) and shown.max_score > 0
    points = reporter_points("grader", {"GRADER_RESULTS": encoded(graded[name])})
    assert points == pytest.approx((shown.score, shown.max_score))


def test_each_graded_check_is_one_test_with_its_points(graded: dict[str, Report]) -> None:
    report = graded["buggy"]
    result = result_json(report)
    checks = [c for c in report.checks if c.status != "skipped"]
    assert len(checks) < len(report.checks), "the CUDA checks are skipped here: not tests"
    assert [t["name"] for t in result["tests"]] == [
        f"{c.name} [{c.device}] ({c.score:g}/{c.max_score:g})" for c in checks]
    assert result["status"] == "fail" and report.score < report.max_score
    failed = [t for t in result["tests"] if t["status"] != "pass"]
    assert failed and all(t["status"] == "fail" and t["score"] == 0 for t in failed)
    # The reporter's log prints a failed test's test_code, never its message.
    assert all("expected: " in t["test_code"] and t["test_code"] == t["message"] for t in failed)
    assert all(t["filename"] == "sgd_step_data_assign.py" for t in result["tests"])
    solved = result_json(graded["solution"])
    assert solved["status"] == "pass" and all(t["status"] == "pass" for t in solved["tests"])


def test_hidden_checks_are_left_out_until_released(graded: dict[str, Report]) -> None:
    report = graded["hidden"]
    hidden = [c for c in report.checks if c.hidden and c.status != "skipped"]
    assert hidden and any(c.status == "failed" for c in hidden)
    student = result_json(report)
    assert not any(t["name"].startswith("sgd_step ") for t in student["tests"])
    assert student["status"] == "pass", "every visible check passed"
    assert student["max_score"] == report.max_score - sum(c.max_score for c in hidden)
    for view in (View(release=True), STAFF):
        released = valid(result_json(report, view=view))
        assert len(released["tests"]) == len(student["tests"]) + len(hidden)
        assert released["max_score"] == report.max_score
        assert sum(t["score"] for t in released["tests"]) == pytest.approx(report.score)


def test_a_submission_that_cannot_be_graded_is_one_error_test(
        graded: dict[str, Report]) -> None:
    report = graded["empty"]
    assert report.error
    result = result_json(report)
    assert result["status"] == "error" and result["max_score"] == report.max_score > 0
    (test,) = result["tests"]
    assert test["status"] == "error" and test["score"] == 0
    assert report.error in test["message"]
    assert test["name"] == f"grading (0/{report.max_score:g})"


def test_an_import_failure_names_the_file_and_the_line(graded: dict[str, Report]) -> None:
    report = graded["import"]
    failed = report.import_error
    assert failed is not None and failed.line
    result = result_json(report)
    assert result["status"] == "error"
    first = result["tests"][0]
    assert (first["name"], first["status"], first["score"]) == ("import optimizer.py",
                                                                "error", 0)
    assert (first["filename"], first["line_no"], first["test_code"]) == (
        "optimizer.py", failed.line, failed.code)
    assert "SyntaxError" in first["message"] + failed.error_type
    assert all(t["status"] != "pass" for t in result["tests"][1:])


def test_a_runtime_failure_is_an_error_and_partial_points_add_up() -> None:
    def check(check_id: str, status: str, score: float, max_score: float,
              kind: str = "numerics") -> CheckResult:
        return CheckResult(id=check_id, name=check_id, function=check_id.split(".")[0],
                           kind=kind, device="cpu", status=status,  # type: ignore[arg-type]
                           passed=status == "passed", score=score, max_score=max_score,
                           message="did not finish in 3 s" if kind == "runtime" else "wrong")

    checks = [check("f.a", "passed", 0.5, 0.5), check("f.b", "failed", 0.25, 1.25),
              check("g.runtime", "failed", 0, 2, kind="runtime")]
    report = Report(lab="optim", score=0.75, max_score=3.75, checks=checks,
                    grader_version="0", torch_version="0", elapsed_s=0)
    result = valid(result_json(report))
    runtime = result["tests"][2]
    assert runtime["status"] == "error" and runtime["message"] == "did not finish in 3 s"
    assert reporter_points("r1", {"R1_RESULTS": encoded(report)}) == (0.75, 3.75)


def test_render_prints_exactly_one_report(graded: dict[str, Report]) -> None:
    with pytest.raises(ValueError):
        render([graded["solution"], graded["buggy"]], view=STUDENT, lang="en")


def _workflow() -> tuple[str, str, str, str]:
    """From docs/github-classroom.md: the grading step's id and `run`, the reporter's env
    variable and the step it reads, and its `runners` input."""
    text = DOCS.read_text()
    step = re.search(r"id: (\S+)\n\s+(?:#.*\n\s+)*run: (.+)\n", text)
    reporter = re.search(r"uses: classroom-resources/autograding-grading-reporter@v1\n"
                         r"\s+env:\n\s+(\S+): \"\$\{\{ steps\.(\S+)\.outputs\.result \}\}\"\n"
                         r"\s+with:\n\s+runners: (\S+)\n", text)
    assert step and reporter, "the workflow snippet in docs/github-classroom.md"
    return step[1], step[2], reporter[1], f"{reporter[2]} {reporter[3]}"


def test_the_documented_workflow_reads_the_variable_the_reporter_reads() -> None:
    step_id, _, variable, reads = _workflow()
    source, runners = reads.split()
    assert source == step_id and runners == step_id
    assert variable == f"{runners.strip().upper()}_RESULTS"  # src/main.js
    assert re.fullmatch(r"[a-zA-Z0-9]+", runners), "the reporter's pattern for runners"


@pytest.mark.cli_subprocess
def test_the_documented_step_writes_a_result_even_when_checks_fail(
        tmp_path: Path, graded: dict[str, Report]) -> None:
    _, run, variable, _ = _workflow()
    bin_dir, checkout = tmp_path / "bin", tmp_path / "checkout"
    bin_dir.mkdir()
    checkout.mkdir()
    shim = bin_dir / "inplace-grader"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m grader "$@"\n')
    shim.chmod(0o755)
    (checkout / "optimizer.py").write_text((KNOWN / "sgd_step_data_assign.py").read_text())
    output = tmp_path / "github_output"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "GITHUB_OUTPUT": str(output)}
    # GitHub Actions runs a `run:` step as `bash --noprofile --norc -eo pipefail {0}`.
    step = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", run],
                          cwd=checkout, env=env, capture_output=True, text=True, timeout=300)
    assert step.returncode == 0, step.stderr
    (line,) = output.read_text().splitlines()
    assert line.startswith("result=")
    value = line.removeprefix("result=")
    result = valid(json.loads(base64.b64decode(value)))
    total, maximum = reporter_points(variable.removesuffix("_RESULTS"), {variable: value})
    assert total < maximum
    assert total == sum(t["score"] for t in result["tests"])
    if not torch.cuda.is_available():  # `check` grades on every device it finds
        assert (total, maximum) == (graded["buggy"].score, graded["buggy"].max_score)
