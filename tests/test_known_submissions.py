"""The grader graded: every named submission gets exactly its expected verdicts.

Each `tests/submissions/<lab>/<name>.py` has `<name>.toml` beside it:

    why = "one line: the idiom or mistake this file stands for"
    fails = [["sgd_step", "allocation"], ...]   # (function, kind) pairs that must fail, on CPU

An empty `fails` is a correct alternative idiom: it must get full marks.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from grader.engine import CheckOptions, check_submission
from grader.sandbox import Sandbox

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SUBMISSIONS = Path(__file__).parent / "submissions"
CASES = sorted(SUBMISSIONS.glob("*/*.py"))


def expected_failures(path: Path) -> set[tuple[str, str]]:
    with path.with_suffix(".toml").open("rb") as handle:
        data = tomllib.load(handle)
    assert data.get("why"), f"{path.with_suffix('.toml')} needs a `why`"
    return {(function, kind) for function, kind in data["fails"]}


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(sorted({p.parent.name for p in CASES})) as running:
        yield running


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_submission_gets_expected_verdicts(path: Path, sandbox: Sandbox) -> None:
    report = check_submission(path, lab=path.parent.name, options=CheckOptions(device="cpu"),
                              sandbox=sandbox)
    failed = {(c.function, c.kind) for c in report.checks if c.status == "failed"}
    assert failed == expected_failures(path), "\n".join(
        f"{c.id}: {c.message}" for c in report.checks if c.status == "failed")
    if not failed:
        assert report.score == report.max_score > 0
