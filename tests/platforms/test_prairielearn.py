"""PrairieLearn: the folder `prairielearn init` writes, its `run` executed as PrairieLearn runs
it, and every results.json validated against the JSON Schema of PrairieLearn's documented
fields.

PrairieLearn mounts the grading job at /grade and runs the entrypoint with no argument. Where
bubblewrap can make a mount namespace here, a temporary folder is bound to /grade and
`/grade/serverFilesCourse/inplace-grader-optim/run` runs exactly so; everywhere, `run` also runs
with its root pointed at a temporary folder (its first argument), so something always runs.
Other jobs go through the command `run` runs, in this process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from grader.models import CheckResult, Report
from grader.platforms.prairielearn.autograder import PrairieLearnConfig, init
from grader.platforms.prairielearn.results import results_json
from grader.views import STUDENT, View
from tests.conftest import ROOT, SOLUTION, Ran, grader_cli

SCHEMA = json.loads(Path(__file__).with_name("prairielearn_results.schema.json").read_text())
HIDDEN = ROOT / "examples" / "optim" / "hidden.toml"
KNOWN = ROOT / "tests" / "submissions" / "optim"
FOLDER = "inplace-grader-optim"  # in the course's serverFilesCourse/
LOOP = ("def sgd_step(params: Iterable[torch.Tensor], lr: float) -> None:\n",
        "def sgd_step(params: Iterable[torch.Tensor], lr: float) -> None:\n"
        "    while True:\n        pass\n")

# INPLACE_GRADER_PYTHON for these tests. `run` calls `python -I -m ...`, and -I ignores
# PYTHONPATH: where the installed grader is another checkout's (an editable install), this
# shim makes the interpreter import this checkout's grader, as the grading image imports its own.
SHIM = '''#!{python} -I
import runpy, sys
sys.path.insert(0, {root!r})
_isolated, _dash_m, module, *args = sys.argv[1:]
sys.argv = [module, *args]
runpy.run_module(module, run_name="__main__", alter_sys=True)
'''


def cli(*args: str, cwd: Path = ROOT) -> Ran:
    """`inplace-grader ARGS` in this process (conftest.grader_cli), run from `cwd`."""
    here = Path.cwd()
    os.chdir(cwd)
    try:
        return grader_cli(*args)
    finally:
        os.chdir(here)


def valid(results: dict) -> dict:
    """Schema-valid, and what <pl-external-grader-results> shows adds up: the tests' points
    summed are the score (it heads the page with them), no test above its maximum."""
    jsonschema.validate(results, SCHEMA)
    assert len(json.dumps(results)) < 1_000_000  # PrairieLearn's limit
    tests = results["tests"]
    assert all(0 <= t["points"] <= t["max_points"] for t in tests)
    if results["gradable"] and tests:
        total = sum(t["max_points"] for t in tests)
        assert results["score"] == pytest.approx(sum(t["points"] for t in tests) / total)
    return results


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`prairielearn init` run in a course folder, far from the checkout, into its
    serverFilesCourse/ (hidden cases, 5 s a function): that folder, and what init printed."""
    course = tmp_path_factory.mktemp("course")
    made = cli("prairielearn", "init", "--lab", "optim", "--hidden", str(HIDDEN),
               "--timeout", "5", "--image", "course/torch-grader",
               "-o", f"serverFilesCourse/{FOLDER}", cwd=course)
    assert made.returncode == 0, made.stderr
    return course / "serverFilesCourse", made.stdout


@pytest.fixture(scope="module")
def course(made: tuple[Path, str]) -> Path:
    """The course's serverFilesCourse/, holding the folder `init` wrote."""
    return made[0]


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> str:
    shim = tmp_path_factory.mktemp("shim") / "python"
    shim.write_text(SHIM.format(python=sys.executable, root=str(ROOT)))
    shim.chmod(0o755)
    return str(shim)


def job(root: Path, course: Path, files: dict[str, str]) -> Path:
    """A grading job's folder as PrairieLearn lays it out: the course's files, the student's."""
    shutil.copytree(course, root / "serverFilesCourse")
    (root / "student").mkdir(parents=True)
    for name, text in files.items():
        (root / "student" / name).write_text(text)
    return root


def run_pointed(root: Path, python: str) -> dict:
    """`run ROOT`: the root pointed at a temporary folder."""
    done = subprocess.run(["bash", str(root / "serverFilesCourse" / FOLDER / "run"), str(root)],
                          env={**os.environ, "INPLACE_GRADER_PYTHON": python},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return valid(json.loads((root / "results" / "results.json").read_text()))


def grade_in_process(root: Path) -> dict:
    """The command `run` runs, `python -m grader.platforms.prairielearn`, in this process (with
    a shared sandbox): what a job earns, without a Python start per job. `run` itself runs in
    the tests of the solution, at /grade, a broken configuration and a grader that cannot
    start."""
    from click.testing import CliRunner

    from grader.platforms.prairielearn.__main__ import main

    (root / "results").mkdir()
    done = CliRunner().invoke(main, ["--root", str(root), "--config",
                                     str(root / "serverFilesCourse" / FOLDER /
                                         "inplace-grader.toml")], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return valid(json.loads((root / "results" / "results.json").read_text()))


def bwrap_problem() -> str:
    """Why bubblewrap cannot run here ("" when it can)."""
    if shutil.which("bwrap") is None:
        return "bwrap (bubblewrap) is not installed"
    tried = subprocess.run(["bwrap", "--dev-bind", "/", "/", "true"], capture_output=True,
                           text=True, timeout=30)
    return "" if tried.returncode == 0 else f"bwrap cannot run here: {tried.stderr.strip()}"


def run_at_grade(root: Path, python: str) -> dict:
    """`/grade/serverFilesCourse/<folder>/run` with no argument, `root` bound to /grade. The
    new root is bwrap's own empty one, each of this machine's top folders bound into it but
    /grade, so no /grade is ever made here."""
    if problem := bwrap_problem():
        pytest.skip(problem)
    command = ["bwrap"]
    for entry in sorted(Path("/").iterdir()):
        if entry.name == "grade":
            continue
        if entry.is_symlink():
            command += ["--symlink", os.readlink(entry), str(entry)]
        else:
            command += ["--dev-bind", str(entry), str(entry)]
    command += ["--bind", str(root), "/grade", f"/grade/serverFilesCourse/{FOLDER}/run"]
    existed = Path("/grade").exists()
    done = subprocess.run(command, env={**os.environ, "INPLACE_GRADER_PYTHON": python},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert Path("/grade").exists() == existed  # nothing made outside the sandbox
    return valid(json.loads((root / "results" / "results.json").read_text()))


@pytest.fixture(scope="module")
def solution(tmp_path_factory: pytest.TempPathFactory, course: Path, python: str) -> dict:
    root = job(tmp_path_factory.mktemp("solution"), course,
               {"optimizer.py": SOLUTION.read_text()})
    return run_pointed(root, python)


@pytest.fixture
def buggy(tmp_path: Path, course: Path, shared_check_sandboxes: None) -> dict:
    source = (KNOWN / "sgd_step_data_assign.py").read_text()
    return grade_in_process(job(tmp_path, course, {"optimizer.py": source}))


def test_init_writes_run_the_configuration_and_the_hidden_cases(course: Path) -> None:
    folder = course / FOLDER
    assert sorted(p.name for p in folder.iterdir()) == ["hidden.toml", "inplace-grader.toml",
                                                         "run"]
    assert (folder / "run").stat().st_mode & 0o777 == 0o755
    assert (folder / "hidden.toml").stat().st_mode & 0o777 == 0o600
    assert (folder / "hidden.toml").read_bytes() == HIDDEN.read_bytes()
    config = (folder / "inplace-grader.toml").read_text()
    assert 'lab = "optim"' in config and 'hidden = "hidden.toml"' in config
    assert "timeout_s = 5.0" in config
    check = subprocess.run(["bash", "-n", str(folder / "run")], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_init_prints_the_info_json_block(made: tuple[Path, str]) -> None:
    printed = made[1]
    assert printed.startswith(f"wrote serverFilesCourse/{FOLDER}/run\n")
    block = json.loads(printed[printed.index("{"):])
    assert block == {"gradingMethod": "External", "externalGradingOptions": {
        "enabled": True, "image": "course/torch-grader", "serverFilesCourse": [f"{FOLDER}/"],
        "entrypoint": f"/grade/serverFilesCourse/{FOLDER}/run",
        # four functions of 5 s each, twice (the hidden cases' own child), and the start
        "timeout": 4 * 5 * 2 + 30}}


@pytest.mark.slow
def test_the_solution_scores_one(solution: dict) -> None:
    assert solution["gradable"] is True and solution["score"] == 1.0
    assert all(t["points"] == t["max_points"] for t in solution["tests"])
    assert all(t["message"] == "" for t in solution["tests"] if t["name"] != "hidden")
    assert solution["message"].startswith("optim: ") and "All checks passed." in solution[
        "message"]
    assert "✓" in solution["output"] and "✗" not in solution["output"]


@pytest.mark.slow
def test_hidden_checks_count_but_are_not_named_until_released(solution: dict) -> None:
    (hidden,) = [t for t in solution["tests"] if t["name"] == "hidden"]
    assert hidden["points"] == hidden["max_points"] > 0
    assert "hidden checks" in hidden["message"] and "graded but not shown" in hidden["message"]
    assert not [t for t in solution["tests"] if "hidden case" in t["name"]]
    assert "points shown" in solution["message"]


@pytest.mark.slow
def test_a_buggy_submission_names_its_failing_tests(buggy: dict) -> None:
    """sgd_step_data_assign.toml: storage, version and allocation fail, nothing else."""
    assert buggy["gradable"] is True and 0 < buggy["score"] < 1
    failed = {t["description"]: t for t in buggy["tests"]
              if t["points"] < t["max_points"] and t["name"] != "hidden"}
    assert set(failed) == {"sgd_step.same_storage", "sgd_step.version_advances",
                           "sgd_step.no_full_size_temporary"}
    assert all(t["message"].startswith("sgd_step: ") and "expected: " in t["output"]
               and "hint: " in t["output"] for t in failed.values())
    (hidden,) = [t for t in buggy["tests"] if t["name"] == "hidden"]
    assert hidden["points"] < hidden["max_points"]  # its hidden sgd_step cases fail too
    assert "3 of " in buggy["message"] and "checks failed" in buggy["message"]


@pytest.mark.slow
@pytest.mark.usefixtures("shared_check_sandboxes")
def test_a_file_that_does_not_import_scores_zero(tmp_path: Path, course: Path) -> None:
    """NOTE: [gradable]: the student's file was run (here, compiled), so it is graded: 0."""
    source = (KNOWN / "syntax_error.py").read_text()
    results = grade_in_process(job(tmp_path, course, {"optimizer.py": source}))
    assert results["gradable"] is True and results["score"] == 0
    assert results["tests"] and all(t["points"] == 0 for t in results["tests"])
    assert "optimizer.py could not be imported: SyntaxError" in results["message"]
    assert "got: SyntaxError at line " in results["message"]


@pytest.mark.slow
@pytest.mark.usefixtures("shared_check_sandboxes")
def test_a_timeout_costs_that_function(tmp_path: Path) -> None:
    """A folder of its own with a 2 s limit and no hidden cases, written in-process."""
    course = tmp_path / "serverFilesCourse"
    init(config=PrairieLearnConfig(lab="optim", timeout_s=2), out=course / FOLDER)
    source = SOLUTION.read_text().replace(*LOOP, 1)
    assert "while True" in source
    results = grade_in_process(job(tmp_path / "job", course, {"optimizer.py": source}))
    (runtime,) = [t for t in results["tests"] if t["description"] == "sgd_step.runtime"]
    assert runtime["points"] == 0 and "2 s" in runtime["message"]
    assert results["gradable"] is True and 0 < results["score"] < 1


@pytest.mark.slow
@pytest.mark.usefixtures("shared_check_sandboxes")
def test_a_missing_upload_is_not_gradable(tmp_path: Path, course: Path) -> None:
    """NOTE: [gradable]: none of the student's code ran, so no attempt is used."""
    results = grade_in_process(job(tmp_path, course, {"notes.txt": "no code"}))
    assert results["gradable"] is False and results["tests"] == []
    reason = "no optimizer.py in your submission"
    assert reason in results["message"] and reason in results["format_errors"][0]


def test_results_are_written_even_when_the_grader_cannot_start(tmp_path: Path,
                                                               course: Path) -> None:
    results = run_pointed(job(tmp_path, course, {"optimizer.py": "x = 1\n"}), "/bin/false")
    assert results["gradable"] is False
    assert "could not start (exit 1)" in results["message"]


def test_a_broken_configuration_is_not_gradable_with_the_reason(tmp_path: Path, course: Path,
                                                                python: str) -> None:
    root = job(tmp_path, course, {"optimizer.py": SOLUTION.read_text()})
    (root / "serverFilesCourse" / FOLDER / "inplace-grader.toml").write_text('lab = "optimz"\n')
    results = run_pointed(root, python)
    assert results["gradable"] is False
    assert "misconfigured" in results["message"] and "unknown lab 'optimz'" in results[
        "message"]


@pytest.mark.slow
def test_run_at_grade_as_prairielearn_runs_it(tmp_path: Path, course: Path, python: str,
                                              solution: dict) -> None:
    """Bubblewrap binds the job to /grade; `run` takes no argument. The same results as the
    run pointed at a temporary folder."""
    at_grade = run_at_grade(job(tmp_path, course, {"optimizer.py": SOLUTION.read_text()}),
                            python)
    assert at_grade["score"] == solution["score"] == 1.0
    assert [(t["name"], t["max_points"]) for t in at_grade["tests"]] == [
        (t["name"], t["max_points"]) for t in solution["tests"]]


@pytest.mark.slow
def test_init_refuses_a_broken_hidden_file_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "hidden.toml"
    bad.write_text('lab = "optim"\n[[case]]\nfunction = "SGD"\nlike = "nope"\nname = "x"\n')
    out = tmp_path / "serverFilesCourse" / FOLDER
    result = cli("prairielearn", "init", "--lab", "optim", "--hidden", str(bad), "-o", str(out))
    assert result.returncode == 2 and "has no case 'nope'" in result.stderr
    assert result.stderr.startswith("inplace-grader: error: ") and result.stderr.count("\n") == 1
    assert not out.exists()


def test_init_keeps_an_existing_grader_without_force(tmp_path: Path) -> None:
    out = tmp_path / FOLDER
    out.mkdir()
    (out / "run").write_text("keep me")
    result = cli("prairielearn", "init", "--lab", "optim", "-o", str(out))
    assert result.returncode == 2 and "--force" in result.stderr
    assert (out / "run").read_text() == "keep me"


def _report(*, hidden_failed: bool) -> Report:
    rows = [("sgd_step.storage", "keeps storage", False, True, 2.0),
            ("sgd_step.values@big", "values (hidden case big)", True, not hidden_failed, 3.0)]
    checks = [CheckResult(id=check_id, name=name, function="sgd_step", kind="storage",
                          device="cpu", status="passed" if passed else "failed", passed=passed,
                          score=points if passed else 0.0, max_score=points, hidden=hidden,
                          message="" if passed else "\x1b[31mwrong\x1b[0m values",
                          expected="1.0", got="2.0", hint="use add_")
              for check_id, name, hidden, passed, points in rows]
    score = sum(c.score for c in checks)
    return Report(lab="optim", submission="optimizer.py", score=score, max_score=5.0,
                  checks=checks, grader_version="0", torch_version="0", elapsed_s=0.1)


def test_released_hidden_checks_are_tests_of_their_own() -> None:
    report = _report(hidden_failed=True)
    withheld = valid(results_json(report, view=STUDENT))
    released = valid(results_json(report, view=View(release=True)))
    assert withheld["score"] == released["score"] == 0.4  # the grade counts hidden checks
    assert [t["name"] for t in withheld["tests"]] == ["keeps storage [cpu]", "hidden"]
    assert withheld["tests"][1]["points"] == 0 and withheld["tests"][1]["max_points"] == 3
    assert [t["name"] for t in released["tests"]] == ["keeps storage [cpu]",
                                                      "values (hidden case big) [cpu]"]
    assert released["tests"][1]["message"] == "[31mwrong[0m values"  # no escape: no colour


def test_a_lab_worth_nothing_scores_zero_not_nan() -> None:
    report = Report(lab="optim", submission="optimizer.py", score=0, max_score=0, checks=[],
                    grader_version="0", torch_version="0", elapsed_s=0.1)
    assert valid(results_json(report))["score"] == 0.0
