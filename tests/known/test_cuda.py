"""CUDA: the same verdicts on the GPU (skipped without a CUDA device)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.engine import CheckOptions, check_submission
from tests.conftest import ROOT, SOLUTION

pytestmark = pytest.mark.cuda


def test_solution_gets_full_marks_on_cuda() -> None:
    report = check_submission(SOLUTION, options=CheckOptions(device="auto"))
    devices = {c.device for c in report.checks if c.status == "passed"}
    assert "cuda" in devices
    assert report.score == report.max_score


def test_buggy_example_is_caught_on_cuda_too() -> None:
    buggy = ROOT / "examples" / "optim" / "buggy" / "optimizer.py"
    report = check_submission(buggy, options=CheckOptions(device="cuda"))
    failed = {(c.function, c.kind) for c in report.checks if c.status == "failed"}
    assert ("sgd_step", "allocation") in failed and ("zero_grad", "identity") in failed


def test_every_known_mistake_gets_the_same_verdicts_on_cuda() -> None:
    from tests.known.test_known_submissions import CASES, expected_failures

    for path in CASES:
        report = check_submission(path, lab=path.parent.name, options=CheckOptions(device="cuda"))
        failed = {(c.function, c.kind) for c in report.checks if c.status == "failed"}
        assert failed == expected_failures(path), Path(path).stem
