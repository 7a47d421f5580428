"""Every reproducer a known mistake gets fails next to that mistake and passes next to the
reference solution (docs/semantics.md#reproducers).

For each file of tests/submissions/<lab>/ that fails checks, its failed checks' reproducers
run in a fresh process beside a copy of the file, named as the lab's file: each must raise
AssertionError. The same reproducers beside solutions/<lab>/ must all run clean. A process
runs all of one file's reproducers, each in its own namespace with the student's module
imported afresh; the processes are forked from one that loaded torch once
(tests/known/reproducers_runner.py). The reports are the ones
tests/known/test_known_submissions.py graded, where both run in one session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.labs import LAB_FILES, get_lab
from grader.models import Report
from tests.conftest import SharedSandboxes
from tests.known.test_known_submissions import CASES, expected_failures, graded, on_one_worker

ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).with_name("reproducers_runner.py")
MISTAKES = [path for path in CASES if expected_failures(path)]
# The labs that write reproducers (Lab.reproducer; a lab without one shows none).
LABS = sorted({path.parent.name for path in MISTAKES
               if get_lab(path.parent.name).reproducer is not None})
# Of the failed checks a student sees that hold a property of the code, the share with a
# reproducer may not fall below this (bench/reproducers.py measures it: 94% to 99%).
COVERAGE = 0.9


def self_reliance(code: str) -> list[str]:
    """The lines of a reproducer that import the grader: none may (it runs where only torch
    and the student's file are)."""
    return [line for line in code.splitlines()
            if line.strip().startswith(("import grader", "from grader"))]


def reproducers_of(report: Report) -> dict[str, str]:
    """The reproducers of a report's failed checks, by `<id> [<device>]`."""
    return {f"{check.id} [{check.device}]": check.reproducer for check in report.checks
            if check.status == "failed" and check.reproducer}


def run_beside(jobs: list[tuple[Path, dict[str, str]]], lab: str, folder: Path
               ) -> list[dict[str, str]]:
    """Each job's reproducers run beside a copy of its source file named as the lab's file,
    one fresh process per job: each reproducer's outcome ("ok", "AssertionError", or another
    exception), job by job."""
    listed = []
    for index, (source, reproducers) in enumerate(jobs):
        place = folder / str(index)
        place.mkdir(parents=True)
        shutil.copy(source, place / LAB_FILES[lab])
        listed.append({"folder": str(place), "module": LAB_FILES[lab].removesuffix(".py"),
                       "reproducers": reproducers})
    (folder / "jobs.json").write_text(json.dumps(listed))
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(RUNNER), str(folder / "jobs.json"),
                           str(folder / "outcomes.json")], cwd=folder, env=environment,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads((folder / "outcomes.json").read_text())
    return [found[job["folder"]] for job in listed]


@pytest.mark.slow
@pytest.mark.parametrize("lab", [pytest.param(lab, marks=on_one_worker(lab)) for lab in LABS])
def test_each_reproducer_fails_beside_its_mistake_and_passes_beside_the_solution(
        lab: str, sandboxes: SharedSandboxes, tmp_path: Path) -> None:
    mistakes = [path for path in MISTAKES if path.parent.name == lab]
    reproducers = {path: reproducers_of(graded(path, sandboxes)) for path in mistakes}
    code = {f"{path.stem}: {name}": text for path, found in reproducers.items()
            for name, text in found.items()}
    assert not [line for text in code.values() for line in self_reliance(text)]
    jobs = [(path, found) for path, found in reproducers.items() if found]
    unique = {text: name for name, text in code.items()}  # many mistakes share one
    solution = ROOT / "solutions" / lab / LAB_FILES[lab]
    *beside_mistakes, beside_solution = run_beside(
        [*jobs, (solution, {name: text for text, name in unique.items()})], lab, tmp_path)
    wrong = [f"beside {path.stem}: {name}: {outcome}\n{found[name]}"
             for (path, found), outcomes in zip(jobs, beside_mistakes, strict=True)
             for name, outcome in outcomes.items() if outcome != "AssertionError"]
    wrong += [f"beside the solution: {name}: {outcome}\n{code[name]}"
              for name, outcome in beside_solution.items() if outcome != "ok"]
    assert not wrong, "\n\n".join(wrong[:10])


@pytest.mark.slow
@pytest.mark.parametrize("lab", [pytest.param(lab, marks=on_one_worker(lab)) for lab in LABS])
def test_most_failed_checks_have_a_reproducer(lab: str, sandboxes: SharedSandboxes) -> None:
    """A reproducer a builder stopped writing (one that raises, a renamed key) is not an
    error anywhere else: the failed check just goes without one."""
    asked = covered = 0
    for path in (path for path in MISTAKES if path.parent.name == lab):
        report = graded(path, sandboxes)
        if report.import_error is not None:
            continue
        for check in report.checks:
            if check.status == "failed" and not check.hidden and check.kind not in (
                    "runtime", "policy") and not check.message.startswith(
                    ("not graded", "waiting for")) and "is not implemented" not in check.message:
                asked += 1
                covered += bool(check.reproducer)
    assert covered >= COVERAGE * asked, (lab, covered, asked)


@pytest.mark.slow
def test_hidden_checks_and_cases_never_get_a_reproducer(sandboxes: SharedSandboxes) -> None:
    """Their inputs stay secret until released; a visible failure of the same file gets one."""
    from grader.engine import CheckOptions, check_submission
    from grader.hidden import load_hidden_file

    hidden = load_hidden_file(ROOT / "examples" / "optim" / "hidden.toml")
    mistake = ROOT / "tests" / "submissions" / "optim" / "Adam_no_bias_correction.py"
    report = check_submission(mistake, lab="optim", sandbox=sandboxes("optim"),
                              options=CheckOptions(device="cpu", hidden=hidden))
    failed = [check for check in report.checks if check.status == "failed"]
    assert any(check.hidden for check in failed)
    assert all(not check.reproducer for check in failed if check.hidden)
    assert any(check.reproducer for check in failed if not check.hidden)
