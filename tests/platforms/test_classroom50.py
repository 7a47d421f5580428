"""Classroom 50: the generated autograder.py run as the runner runs it (`python autograder.py`
in the student's checkout, identity in the environment), other checkouts through the command it
runs, in this process; result.json validated against the documented result schema, with the
checks the runner makes itself (score <= max-score, sums)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from grader.errors import UsageError
from grader.exporters.points import points_scale
from grader.models import CheckResult, Report
from grader.platforms.classroom50.autograder import run
from grader.platforms.classroom50.result import result_json
from grader.views import View
from tests.conftest import ROOT, SOLUTION, grader_cli

# Commands run in this process borrow their sandbox (conftest.shared_check_sandboxes).
pytestmark = pytest.mark.usefixtures("shared_check_sandboxes")

SCHEMA = json.loads(Path(__file__).with_name("classroom50_result.schema.json").read_text())
KNOWN = ROOT / "tests" / "submissions" / "optim"
ENV = {"CLASSROOM": "cs50ai", "ASSIGNMENT": "optim", "OWNER": "alice", "USERNAME": "alice",
       "ASSIGNMENT_TYPE": "individual", "SUBMISSION_TAG": "submit/2026-11-30T12-00-00Z-abc1234",
       "COMMIT_URL": "https://github.com/c/r/commit/abc1234",
       "RELEASE_URL": "https://github.com/c/r/releases/tag/submit",
       "REVIEW_URL": "https://github.com/c/r/compare/a...b"}


def valid(result: dict) -> dict:
    jsonschema.validate(result, SCHEMA)
    assert 0 <= result["score"] <= result["max-score"]
    assert result["score"] == sum(t["score"] for t in result["tests"])
    assert result["max-score"] == sum(t["max-score"] for t in result["tests"])
    return result


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundle")
    made = grader_cli("classroom50", "init", "--lab", "optim", "-o", str(out))
    assert made.returncode == 0, made.stderr
    return out


def checked_out(checkout: Path, files: dict[str, str]) -> Path:
    checkout.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (checkout / name).write_text(text)
    return checkout


def graded(checkout: Path) -> dict:
    """What the run left in the checkout: the release body and a valid result.json."""
    body = (checkout / "release-body.md").read_text()
    assert body.startswith("```\n") and "optim: " in body
    return valid(json.loads((checkout / "result.json").read_text()))


def runner(bundle: Path, checkout: Path, files: dict[str, str]) -> dict:
    """What Classroom 50's runner does: `python autograder.py` with cwd = the checkout."""
    checked_out(checkout, files)
    # PIP_DRY_RUN: where this interpreter's grader were not found, the autograder would install
    # the bundled wheel over the developer's editable install; here it may only pretend to.
    env = {**os.environ, **ENV, "CLASSROOM50_BUNDLE_DIR": str(bundle), "PIP_DRY_RUN": "1"}
    run = subprocess.run([sys.executable, str(bundle / "autograder.py")], cwd=checkout,
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return graded(checkout)


def grade_in_process(checkout: Path, files: dict[str, str]) -> dict:
    """The command autograder.py runs, `classroom50 run`, in this process (conftest.grader_cli,
    with a shared sandbox): what a checkout earns, without a Python start per checkout. The
    script itself runs for the correct checkout and where the install fails."""
    checked_out(checkout, files)
    ran = grader_cli("classroom50", "run", "--lab", "optim", "--checkout", str(checkout),
                     env=ENV)
    assert ran.returncode == 0, ran.stderr
    return graded(checkout)


def test_init_writes_the_autograder_and_the_wheel(bundle: Path) -> None:
    assert (bundle / "autograder.py").is_file()
    assert len(list(bundle.glob("inplace_grader-*.whl"))) == 1
    text = (bundle / "autograder.py").read_text()
    assert 'LAB = "optim"' in text and 'TORCH = "2.' in text
    assert "@LAB@" not in text and "@TORCH_VERSION@" not in text


def test_an_install_that_fails_still_leaves_a_valid_result(bundle: Path, tmp_path: Path) -> None:
    """The bundle's own fallback writes result.json with the identity code init pasted into
    it (the grader's own definition): no grader needed, no file beside it."""
    # The fallback below imports autograder.py, and so may leave a __pycache__ beside it.
    assert sorted(p.suffix for p in bundle.iterdir() if p.name != "__pycache__") == [
        ".py", ".whl"]
    script = str(bundle / "autograder.py")
    fallback = ("import importlib.util, sys\n"
                f"spec = importlib.util.spec_from_file_location('ag', {script!r})\n"
                "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
                "module.setup_failed('no network')\n")
    run = subprocess.run([sys.executable, "-I", "-S", "-c", fallback], cwd=tmp_path,
                         env={**os.environ, **ENV}, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    result = valid(json.loads((tmp_path / "result.json").read_text()))
    assert result["owner"] == "alice" and result["commit"] == ENV["COMMIT_URL"]
    assert "could not be installed: no network" in result["tests"][0]["message"]


@pytest.mark.cli_subprocess
def test_a_correct_checkout_gets_every_point(bundle: Path, tmp_path: Path) -> None:
    result = runner(bundle, tmp_path / "repo", {"optimizer.py": SOLUTION.read_text()})
    assert result["score"] == result["max-score"] > 0
    assert result["owner"] == "alice" and result["submission"] == ENV["SUBMISSION_TAG"]
    assert all(t["passed"] for t in result["tests"])


def test_a_buggy_checkout_loses_the_right_points(tmp_path: Path) -> None:
    files = {"optimizer.py": (KNOWN / "sgd_step_data_assign.py").read_text(), "README.md": "x"}
    result = grade_in_process(tmp_path / "repo", files)
    failed = [t for t in result["tests"] if not t["passed"]]
    assert failed and all(t["check"].startswith("sgd_step.") for t in failed)
    assert all(t["message"] and t["score"] == 0 for t in failed)


def test_a_crash_and_an_empty_checkout_still_give_a_result(tmp_path: Path) -> None:
    crashed = grade_in_process(tmp_path / "crash", {"optimizer.py": "raise SystemExit(4)\n"})
    assert crashed["score"] == 0 and crashed["max-score"] > 0
    empty = grade_in_process(tmp_path / "empty", {"notes.txt": "no code"})
    assert empty["score"] == 0 and empty["max-score"] == crashed["max-score"]
    assert "no optimizer.py in your submission" in empty["tests"][0]["message"]


@pytest.mark.slow
def test_a_timeout_is_a_failed_runtime_test(tmp_path: Path) -> None:
    source = SOLUTION.read_text().replace(
        "def sgd_step(params: Iterable[torch.Tensor], lr: float) -> None:\n",
        "def sgd_step(params: Iterable[torch.Tensor], lr: float) -> None:\n"
        "    while True:\n        pass\n", 1)
    (tmp_path / "optimizer.py").write_text(source)
    ran = grader_cli("classroom50", "run", "--lab", "optim", "--timeout", "3", "--checkout",
                     str(tmp_path), env=ENV)
    assert ran.returncode == 0, ran.stderr
    result = valid(json.loads((tmp_path / "result.json").read_text()))
    # `run` grades on every device there is: one runtime test per device (cuda's on a GPU).
    runtime = [t for t in result["tests"] if t["check"] == "sgd_step.runtime"]
    on_cpu = [t for t in runtime if t["test-name"].endswith("[cpu]")]
    assert len(on_cpu) == 1 and not on_cpu[0]["passed"] and "3 s" in on_cpu[0]["message"]
    assert not any(t["passed"] for t in runtime)


def test_fractional_points_are_scaled_to_whole_numbers() -> None:
    def check(score: float, max_score: float) -> CheckResult:
        return CheckResult(id="f.c", name="c", function="f", kind="numerics", device="cpu",
                           status="passed" if score == max_score else "failed",
                           passed=score == max_score, score=score, max_score=max_score)

    checks = [check(0.5, 0.5), check(0, 1.25), check(2, 2)]
    assert points_scale(c.max_score for c in checks) == 4
    report = Report(lab="optim", score=2.5, max_score=3.75, checks=checks,
                    grader_version="0", torch_version="0", elapsed_s=0)
    result = valid(result_json(report, env=ENV))
    assert (result["score"], result["max-score"]) == (10, 15)
    assert all(t["points-scale"] == 4 for t in result["tests"])


def test_an_ungraded_submission_with_fractional_points_keeps_the_whole_maximum() -> None:
    report = Report(lab="optim", score=0, max_score=23.5, checks=[], error="empty",
                    grader_version="0", torch_version="0", elapsed_s=0)
    result = valid(result_json(report, env=ENV))
    assert (result["score"], result["max-score"]) == (0, 47)
    assert result["tests"][0]["points-scale"] == 2


def test_an_ungraded_submission_shows_only_visible_points_until_release() -> None:
    report = Report(lab="optim", score=0, max_score=23, hidden_max_score=7, checks=[],
                    error="empty", grader_version="0", torch_version="0", elapsed_s=0)
    assert valid(result_json(report, env=ENV))["max-score"] == 16
    assert valid(result_json(report, env=ENV, view=View(release=True)))["max-score"] == 23


def test_a_local_run_without_the_runners_environment_still_validates() -> None:
    report = Report(lab="optim", score=0, max_score=5, checks=[], error="empty",
                    grader_version="0", torch_version="0", elapsed_s=0)
    result = valid(result_json(report, env={}))
    assert result["submission"] == "submit/local" and result["max-score"] == 5


def test_check_prints_a_classroom50_result() -> None:
    ran = grader_cli("check", str(SOLUTION), "--format", "classroom50", "--device", "cpu",
                     env=ENV)
    assert ran.returncode == 0, ran.stderr
    result = valid(json.loads(ran.stdout))
    assert result["score"] == result["max-score"] > 0


def test_a_machine_problem_still_writes_a_result(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """What stops a local run in one line (no free uid slot on this machine) is, on Classroom
    50's runner, a result that says so: the runner reads result.json whatever happened."""
    import grader.engine

    def no_slot(*args: object, **kwargs: object) -> None:
        raise UsageError("all 64 worker uid slots on this machine are taken")

    monkeypatch.setattr(grader.engine, "grade_upload", no_slot)
    run(tmp_path, lab="optim", env=ENV)
    result = valid(json.loads((tmp_path / "result.json").read_text()))
    assert result["score"] == 0 and "uid slots" in result["tests"][0]["message"]
    assert (tmp_path / "release-body.md").is_file()
