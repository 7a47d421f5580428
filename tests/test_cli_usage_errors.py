"""Usage errors: one line in one format, exit 2, before torch is imported (so, at once).

Each bad input a new user makes in the first hour: a typo in a rubric or hidden-cases file, a
command run from the wrong folder, click's own errors, an --out of another lab, a file with
nothing to grade. A torch that raises when imported sits first on the path: a usage error that
reaches torch fails loudly."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.models import RubricOverride
from tests.conftest import ROOT, SOLUTION, Ran, full_marks, grader_cli

# Commands run in this process borrow their sandboxes
# (conftest.shared_batch_workers, shared_check_sandboxes).
pytestmark = pytest.mark.usefixtures("shared_batch_workers", "shared_check_sandboxes")

HIDDEN = ROOT / "examples" / "optim" / "hidden.toml"


def _bad_inputs(folder: Path) -> dict[str, list[str]]:
    rubric = folder / "rubric.toml"
    rubric.write_text('[weights]\n"sgd_step.storge" = 3\n')
    hide = folder / "hide.toml"
    hide.write_text(HIDDEN.read_text().replace("Adam.trajectory.small_grads",
                                               "Adam.trajectory.smal_grads"))
    other = folder / "other_lab.toml"
    other.write_text(HIDDEN.read_text().replace('lab = "optim"', 'lab = "tensor_ops"'))
    (folder / "class").mkdir()
    return {
        "rubric typo": ["check", str(SOLUTION), "--rubric", str(rubric)],
        "rubric typo in grade": ["grade", str(folder / "class"), "--lab", "optim",
                                 "--out", str(folder / "out"), "--rubric", str(rubric)],
        "hide typo": ["check", str(SOLUTION), "--hidden", str(hide)],
        "hidden file of another lab": ["check", str(SOLUTION), "--hidden", str(other)],
        "build from the wrong folder": ["gradescope", "build", "--lab", "optim",
                                        "--root", str(folder), "-o", str(folder / "a.zip")],
        "missing argument": ["check"],
        "unknown option": ["check", str(SOLUTION), "--lb", "optim"],
        "bad choice": ["check", str(SOLUTION), "--device", "gpu"],
        "unknown command": ["chek", str(SOLUTION)],
        "report of a folder grade did not write": ["report", str(folder / "class")],
    }


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **env}, cwd=ROOT)


def _cli(args: list[str]) -> Ran:
    """The same command in this process (conftest.grader_cli): where nothing is asked of the
    process itself (its imports, its start-up time)."""
    return grader_cli(*args)


@pytest.fixture
def no_torch(tmp_path: Path) -> str:
    """A PYTHONPATH whose torch raises on import (the grader itself comes first)."""
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ImportError("torch was imported")\n')
    return os.pathsep.join([str(ROOT), str(fake.parent)])


@pytest.mark.cli_subprocess
def test_every_usage_error_is_one_line_exit_2_and_imports_no_torch(tmp_path: Path,
                                                                   no_torch: str) -> None:
    for name, args in _bad_inputs(tmp_path).items():
        result = _run(args, PYTHONPATH=no_torch)
        assert result.returncode == 2, (name, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("inplace-grader: error: "), (name, lines)
        assert "torch was imported" not in result.stderr, name
        assert result.stdout == "", name


def test_typos_name_what_was_meant(tmp_path: Path) -> None:
    inputs = _bad_inputs(tmp_path)
    assert "did you mean sgd_step.same_storage" in _cli(inputs["rubric typo"]).stderr
    assert "did you mean Adam.trajectory.small_grads" in _cli(inputs["hide typo"]).stderr
    dtype = tmp_path / "dtype.toml"
    dtype.write_text(HIDDEN.read_text().replace('dtype = "float64"', 'dtype = "float65"', 1))
    message = _cli(["check", str(SOLUTION), "--hidden", str(dtype)]).stderr
    assert "unknown dtype 'float65'; choose float32, float64, float16, bfloat16" in message
    assert "KeyError" not in message


@pytest.mark.cli_subprocess
def test_a_usage_error_takes_well_under_a_bare_torch_import(tmp_path: Path) -> None:
    """Medians of alternating runs in the same test, so machine load affects both alike."""
    args = _bad_inputs(tmp_path)["rubric typo"]
    errors, imports = [], []
    for _ in range(3):
        started = time.perf_counter()
        _run(args)
        errors.append(time.perf_counter() - started)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        imports.append(time.perf_counter() - started)
    assert statistics.median(errors) < 0.7 * statistics.median(imports)


def test_grade_refuses_an_out_folder_of_another_lab_and_overwrites_nothing(
        tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "reports").mkdir(parents=True)
    theirs = out / "reports" / "alice.json"
    theirs.write_text(json.dumps({"lab": "tensor_ops", "student": "alice"}))
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "alice.py").write_text(SOLUTION.read_text())
    result = _cli(["grade", str(tmp_path / "class"), "--lab", "optim", "--out", str(out)])
    assert result.returncode == 2
    assert result.stderr.strip() == (f"inplace-grader: error: {out}: reports of several labs "
                                     "(optim, tensor_ops); grade each lab into its own --out "
                                     "folder")
    assert json.loads(theirs.read_text())["lab"] == "tensor_ops"
    assert not (out / "gradebook.csv").exists()


@pytest.mark.parametrize(("content", "said"), [
    ("", "optimizer.py is empty"),
    ("# nothing here yet\n\nx = 1\n", "optimizer.py defines none of the lab's names "
                                      "(zero_grad, sgd_step, SGD, Adam): is it the right file?"),
])
def test_nothing_to_grade_is_one_line_in_check_and_an_error_row_in_grade(
        tmp_path: Path, content: str, said: str) -> None:
    (tmp_path / "optimizer.py").write_text(content)
    result = _cli(["check", str(tmp_path / "optimizer.py")])
    assert result.returncode == 2
    assert result.stderr.strip() == f"inplace-grader: error: {said}"
    (tmp_path / "class" / "kofi").mkdir(parents=True)
    (tmp_path / "class" / "kofi" / "optimizer.py").write_text(content)
    graded = _cli(["grade", str(tmp_path / "class"), "--lab", "optim", "--out",
                   str(tmp_path / "out"), "--device", "cpu"])
    assert graded.returncode == 0, graded.stderr
    assert f"not graded: kofi: {said}" in graded.stdout
    report = json.loads((tmp_path / "out" / "reports" / "kofi.json").read_text())
    assert report["error"] == said and report["max_score"] == full_marks("optim")


def test_an_output_folder_that_cannot_be_written_is_refused_before_grading(tmp_path: Path
                                                                          ) -> None:
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "alice.py").write_text(SOLUTION.read_text())
    started = time.perf_counter()
    result = _cli(["grade", str(tmp_path / "class"), "--lab", "optim", "-o", "/proc/nope"])
    # Nothing graded first (docs/semantics.md#measurements).
    assert time.perf_counter() - started < 30
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().startswith("inplace-grader: error: --output /proc/nope: "
                                            "cannot write there")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.usefixtures("shared_batch_workers")
def test_a_rerun_with_another_rubric_is_refused_unless_forced(tmp_path: Path) -> None:
    from grader.engine.rubric import rubric_in_force, rubric_key

    out = tmp_path / "out"
    (out / "reports").mkdir(parents=True)
    graded = {"lab": "optim", "student": "alice", "checks": [],
              "rubric_key": rubric_key(rubric_in_force("optim", None))}
    (out / "reports" / "alice.json").write_text(json.dumps(graded))
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "alice.py").write_text(SOLUTION.read_text())
    rubric = tmp_path / "rubric.toml"
    rubric.write_text('[weights]\n"sgd_step.same_storage" = 3\n')
    args = ["grade", str(tmp_path / "class"), "--lab", "optim", "--out", str(out),
            "--rubric", str(rubric), "--device", "cpu"]
    result = _cli(args)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"inplace-grader: error: {out}: its reports were graded with another rubric, which "
        "this run would replace; pass the same --rubric FILE, or --force to regrade with this "
        "one")
    assert json.loads((out / "reports" / "alice.json").read_text()) == graded
    forced = _cli([*args, "--force"])
    assert forced.returncode == 0, forced.stderr
    report = json.loads((out / "reports" / "alice.json").read_text())
    assert report["rubric_key"] == rubric_key(rubric_in_force(
        "optim", RubricOverride(weights={"sgd_step.same_storage": 3})))
    assert _cli(args).returncode == 0  # the same rubric again: nothing to refuse


def test_a_rerun_that_would_drop_the_hidden_results_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "reports").mkdir(parents=True)
    graded = {"lab": "optim", "student": "alice",
              "checks": [{"id": "SGD.trajectory.hidden_case", "hidden": True}]}
    (out / "reports" / "alice.json").write_text(json.dumps(graded))
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "alice.py").write_text(SOLUTION.read_text())
    result = _cli(["grade", str(tmp_path / "class"), "--lab", "optim", "--out", str(out)])
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"inplace-grader: error: {out}: its reports were graded with --hidden cases, which "
        "this run would drop; pass the same --hidden FILE, or --force to regrade without them")
    assert json.loads((out / "reports" / "alice.json").read_text()) == graded
