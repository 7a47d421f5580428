"""Every reproducer a known mistake gets fails next to that mistake and passes next to the
reference solution (docs/semantics.md#reproducers).

For each file of tests/submissions/<lab>/ that fails checks, its failed checks' reproducers
run in a fresh interpreter beside a copy of the file, named as the lab's file: each must
raise AssertionError. The same reproducers beside solutions/<lab>/ must all run clean. One
interpreter runs all of a file's reproducers, each in its own namespace with the student's
module imported afresh (tests/reproducers_runner.py). The reports are the ones
tests/test_known_submissions.py graded, where both run in one session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.labs import LAB_FILES
from grader.models import Report
from grader.sandbox import Sandbox
from tests.test_known_submissions import CASES, expected_failures, graded

ROOT = Path(__file__).resolve().parents[1]
RUNNER = Path(__file__).with_name("reproducers_runner.py")
MISTAKES = [path for path in CASES if expected_failures(path)]


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(sorted({p.parent.name for p in CASES})) as running:
        yield running


def reproducers_of(report: Report) -> dict[str, str]:
    """The reproducers of a report's failed checks, by `<id> [<device>]`."""
    return {f"{check.id} [{check.device}]": check.reproducer for check in report.checks
            if check.status == "failed" and check.reproducer}


def run_beside(source: Path, lab: str, reproducers: dict[str, str], folder: Path
               ) -> dict[str, str]:
    """Each reproducer's outcome ("ok", "AssertionError", or another exception) run in one
    fresh interpreter, beside a copy of `source` named as the lab's file."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, folder / LAB_FILES[lab])
    (folder / "reproducers.json").write_text(json.dumps(reproducers))
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(RUNNER), str(folder / "reproducers.json"),
                           str(folder / "outcomes.json"), LAB_FILES[lab].removesuffix(".py")],
                          cwd=folder, env=environment, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    outcomes: dict[str, str] = json.loads((folder / "outcomes.json").read_text())
    return outcomes


@pytest.mark.slow
@pytest.mark.parametrize("path", MISTAKES, ids=[f"{p.parent.name}/{p.stem}" for p in MISTAKES])
def test_each_reproducer_fails_beside_its_mistake(path: Path, sandbox: Sandbox,
                                                  tmp_path: Path) -> None:
    lab = path.parent.name
    reproducers = reproducers_of(graded(path, sandbox))
    if not reproducers:
        pytest.skip("no failed check has a reproducer")
    outcomes = run_beside(path, lab, reproducers, tmp_path)
    wrong = {name: outcome for name, outcome in outcomes.items() if outcome != "AssertionError"}
    assert not wrong, "\n\n".join(f"{name}: {outcome}\n{reproducers[name]}"
                                  for name, outcome in wrong.items())


@pytest.mark.slow
@pytest.mark.parametrize("lab", sorted({p.parent.name for p in MISTAKES}))
def test_every_reproducer_passes_beside_the_solution(lab: str, sandbox: Sandbox,
                                                     tmp_path: Path) -> None:
    reproducers = {f"{path.stem}: {name}": code for path in MISTAKES if path.parent.name == lab
                   for name, code in reproducers_of(graded(path, sandbox)).items()}
    unique = {code: name for name, code in reproducers.items()}  # many mistakes share one
    outcomes = run_beside(ROOT / "solutions" / lab / LAB_FILES[lab], lab,
                          {name: code for code, name in unique.items()}, tmp_path)
    wrong = {name: outcome for name, outcome in outcomes.items() if outcome != "ok"}
    assert not wrong, "\n\n".join(f"{name}: {outcome}\n{reproducers[name]}"
                                  for name, outcome in wrong.items())
