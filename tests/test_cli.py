"""The command line end to end: exit codes, one JSON object, text report, usage errors.

Most commands run in this process (conftest.grader_cli); those marked `cli_subprocess` run
`python -m grader` as a user does, for what only a process of its own shows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grader.labs import LAB_FILES
from grader.models import Report
from tests.conftest import SOLUTION, STUB, grader_cli

# `check` run in this process borrows its sandbox (conftest.shared_check_sandboxes).
pytestmark = pytest.mark.usefixtures("shared_check_sandboxes")

run = grader_cli

LABS = ", ".join(sorted(LAB_FILES))  # as the command line lists them


def unwrapped(text: str) -> str:
    """Help as one line: click wraps it at the terminal's width, wherever the labs' names
    happen to fall."""
    return " ".join(text.split())


def run_process(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.cli_subprocess
def test_solution_gets_full_marks_as_one_json_object() -> None:
    result = run_process("check", str(SOLUTION), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = Report.model_validate_json(result.stdout)  # exactly one object, nothing else
    assert report.score == report.max_score > 0
    assert report.lab == "optim"
    assert {c.kind for c in report.checks} >= {"api", "identity", "storage", "version",
                                               "numerics", "allocation", "side_effect",
                                               "autograd", "policy"}


def test_stub_scores_zero_with_not_implemented_and_exit_1() -> None:
    result = run("check", str(STUB), "--format", "json", "--lang", "en")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["score"] == 0.0 and report["max_score"] > 0
    graded = [c for c in report["checks"] if c["status"] != "skipped"]
    assert all("not implemented" in c["message"] for c in graded)


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("lab", sorted(LAB_FILES))
def test_every_lab_solution_full_marks_and_stub_zero(lab: str) -> None:
    solution = run("check", str(ROOT / "solutions" / lab / LAB_FILES[lab]), "--format", "json")
    assert solution.returncode == 0, solution.stdout[-2000:]
    report = Report.model_validate_json(solution.stdout)
    assert report.lab == lab and report.score == report.max_score > 0
    stub = run("check", str(ROOT / "assignments" / lab / LAB_FILES[lab]), "--format", "json",
               "--lang", "en")
    assert stub.returncode == 1
    stub_report = Report.model_validate_json(stub.stdout)
    assert stub_report.score == 0
    graded = [c for c in stub_report.checks if c.status != "skipped"]
    assert graded and all("not implemented" in c.message for c in graded)


def test_text_report_marks_and_explains_failures(tmp_path: Path) -> None:
    buggy = Path(__file__).parents[1] / "examples" / "optim" / "buggy" / "optimizer.py"
    result = run("check", str(buggy), "--lang", "en")
    assert result.returncode == 1
    assert "✓" in result.stdout and "✗" in result.stdout
    assert "aten::mul created a 1.0 MB float32 tensor" in result.stdout
    assert "expected:" in result.stdout and "hint:" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_korean_feedback() -> None:
    result = run("check", str(STUB), "--lang", "ko")
    assert result.returncode == 1
    assert "구현" in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["check", "missing.py"], "no such file"),
    (["check", str(SOLUTION), "--lab", "nope"],
     f"unknown lab 'nope' (available: {LABS})"),
    (["check", str(SOLUTION), "--lab", "Optim"], "unknown lab 'Optim'; did you mean 'optim'?"),
    (["check", str(SOLUTION), "--lab", "optimizer"], "did you mean 'optim'?"),
    (["check", str(Path(__file__))], "cannot tell the lab"),
    (["check", str(SOLUTION), "--rubric", "missing.toml"], "cannot read the rubric file"),
])
def test_usage_errors_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""


def test_rubric_override_changes_weights_and_switches_a_policy_off(tmp_path: Path) -> None:
    rubric = tmp_path / "rubric.toml"
    rubric.write_text('[weights]\n"sgd_step.values" = 10\n[policies]\ntorch_optim = false\n')
    report = Report.model_validate_json(
        run("check", str(SOLUTION), "--format", "json", "--rubric", str(rubric)).stdout)
    values = next(c for c in report.checks if c.id == "sgd_step.values")
    assert values.max_score == 10
    assert not [c for c in report.checks if c.kind == "policy"]


def test_rubric_override_with_an_unknown_check_is_a_usage_error(tmp_path: Path) -> None:
    rubric = tmp_path / "rubric.toml"
    rubric.write_text('[weights]\n"sgd_step.typo" = 1\n')
    result = run("check", str(SOLUTION), "--rubric", str(rubric))
    assert result.returncode == 2
    assert "unknown check id 'sgd_step.typo'" in result.stderr


def test_folder_and_notebook_submissions(tmp_path: Path, solution_source: str) -> None:
    import nbformat

    folder = tmp_path / "alice"
    folder.mkdir()
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# My optimizer"),
                      nbformat.v4.new_code_cell("%matplotlib inline"),
                      nbformat.v4.new_code_cell(solution_source)]
    nbformat.write(notebook, folder / "optimizer.ipynb")
    result = run("check", str(folder), "--format", "json")
    assert result.returncode == 0, result.stdout[-2000:]


def test_schema_is_the_report_schema() -> None:
    result = run("schema")
    assert json.loads(result.stdout)["title"] == "Report"


@pytest.mark.cli_subprocess
def test_json_stdout_stays_one_object_when_the_submission_prints(make_submission) -> None:
    """The submission writes to descriptor 1: a process of its own shows where that goes."""
    path = make_submission(prelude='import os\nprint("hello")\nos.write(1, b"{}\\n")\n')
    result = run_process("check", str(path), "--format", "json")
    assert result.returncode == 0
    assert json.loads(result.stdout)["score"] > 0


@pytest.mark.cli_subprocess
def test_the_command_line_does_not_import_torch_before_the_worker_starts() -> None:
    """The worker imports torch while the grading process does: importing it first would
    serialise the two imports (docs/sandbox.md#numbers-behind-the-code)."""
    code = ("import sys, grader.cli, grader.engine, grader.labs, grader.batch; "
            "print('torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.stdout.strip() == "False", result.stderr


def test_a_notebook_that_fails_to_import_says_to_run_its_cells(tmp_path: Path) -> None:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("import torch"),
                      nbformat.v4.new_code_cell("1 / 0")]
    path = tmp_path / "optimizer.ipynb"
    nbformat.write(notebook, path)
    report = Report.model_validate_json(run("check", str(path), "--format", "json").stdout)
    assert report.score == 0
    first = report.import_error
    assert first is not None and (first.cell, first.cell_line) == (2, 1)
    assert "code cells of optimizer.ipynb could not be imported: ZeroDivisionError" in \
        first.message
    assert "run all cells of optimizer.ipynb" in first.hint


def test_debug_shows_what_each_function_printed_passing_or_failing(make_submission) -> None:
    sgd = "def sgd_step(params: Iterable[torch.Tensor], lr: float) -> None:\n"
    zero = "def zero_grad(params: Iterable[torch.Tensor], set_to_none: bool = False) -> None:\n"
    path = make_submission((sgd, sgd + "    print('in sgd_step')\n"),
                           (zero, zero + "    print('in zero_grad', file=sys.stderr)\n"
                                         "    raise RuntimeError('zero_grad fails')\n"),
                           prelude="import sys\nprint('at import')\n")
    result = run("check", str(path), "--debug", "--device", "cpu")
    assert result.returncode == 1
    out = result.stdout
    assert "Printed while your file was imported:\nat import" in out
    assert "Printed while zero_grad was checked (cpu):\nin zero_grad" in out  # it fails
    assert "Printed while sgd_step was checked (cpu):\nin sgd_step" in out  # it passes
    assert "USDT:" not in out  # the grader's profiler meter is not the student's output
    assert "RuntimeError: zero_grad fails" in out  # the traceback of the failure
    report = Report.model_validate_json(run("check", str(path), "--format", "json").stdout)
    assert {(p.function, p.text.splitlines()[0]) for p in report.output} >= {
        ("", "at import"), ("sgd_step", "in sgd_step"), ("zero_grad", "in zero_grad")}
    assert "Printed while" not in run("check", str(path)).stdout  # only with --debug


def test_help_lists_the_labs_and_keeps_the_course_teams_commands_out() -> None:
    main_help = run("--help").stdout
    assert "check " in main_help and "stubs" not in main_help
    assert run("stubs", "--help").returncode == 0  # still there for the course team
    assert f"Lab name: {LABS}" in unwrapped(run("check", "--help").stdout)
    assert f"Lab name: {LABS}" in unwrapped(run("grade", "--help").stdout)


def test_checks_prints_a_header_row() -> None:
    lines = run("checks", "--lab", "optim").stdout.splitlines()
    assert lines[0].split() == ["check", "kind", "points", "graded"]
    assert lines[1].split()[0] == "zero_grad.signature"


@pytest.mark.parametrize("output_format", ["gradescope", "github-classroom", "junit", "json"])
def test_a_missing_file_still_gives_a_pipeline_its_result(tmp_path: Path,
                                                          output_format: str) -> None:
    """A CI step or an LMS runner reads the result it asked for whatever happened: a missing
    file is an error result naming the reason, besides the usual one line and exit 2."""
    missing = tmp_path / "optimizer.py"
    result = run("check", str(missing), "--format", output_format)
    assert result.returncode == 2
    assert result.stderr.strip() == f"inplace-grader: error: {missing}: no such file or folder"
    assert "no such file or folder" in result.stdout
    if output_format in ("gradescope", "github-classroom", "json"):
        printed = json.loads(result.stdout)
        score = printed.get("score", sum(t.get("score", 0) for t in printed.get("tests", [])))
        assert score == 0


@pytest.mark.parametrize("command", [
    ["nbgrader", "source", "--lab", "optim", "-o", "course/source/ps1"],
    ["classroom50", "init", "--lab", "optim", "-o", "classroom/autograders/optim"],
    ["gradescope", "build", "--lab", "optim", "-o", "autograder.zip"],
])
def test_the_builders_work_from_any_folder(tmp_path: Path, command: list[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """An instructor outside the checkout: without --root the builders take the solutions
    and the grader from the grader that runs (here the checkout; an installed one in
    tests/test_distribution.py)."""
    monkeypatch.chdir(tmp_path)
    ran = grader_cli(*command)
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / command[-1]).exists()
