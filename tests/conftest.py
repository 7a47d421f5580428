from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "solutions" / "optim" / "optimizer.py"
STUB = ROOT / "assignments" / "optim" / "optimizer.py"


# Set by a shell or a CI system, these change what the grader prints, not whether it is right:
# a Korean locale picks Korean feedback, FORCE_COLOR and its kin make rich colour text that is
# piped, COLUMNS makes click wrap its help. The suite reads English, uncoloured, unwrapped text.
_PRESENTATION = ("FORCE_COLOR", "CLICOLOR_FORCE", "PY_COLORS", "TTY_COMPATIBLE",
                 "TTY_INTERACTIVE", "COLUMNS", "LINES")


def pytest_configure(config: pytest.Config) -> None:
    os.environ["LC_ALL"] = "C.UTF-8"
    for variable in _PRESENTATION:
        os.environ.pop(variable, None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def solution_source() -> str:
    from grader.stubs import strip_markers

    return strip_markers(SOLUTION.read_text())


@pytest.fixture
def make_submission(tmp_path: Path, solution_source: str):
    """Write `optimizer.py` = the solution with `replacements` applied (old -> new)."""

    def make(*replacements: tuple[str, str], prelude: str = "") -> Path:
        source = solution_source
        for old, new in replacements:
            assert old in source, old
            source = source.replace(old, new)
        path = tmp_path / "optimizer.py"
        future = "from __future__ import annotations\n"
        path.write_text(source.replace(future, future + prelude, 1))
        return path

    return make


def full_marks(lab: str) -> float:
    """A lab's full marks on the CPU: its rubric's points, every check counted once."""
    from grader.labs import lab_rubric

    return sum(lab_rubric(lab).points.values())
