from __future__ import annotations

from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "solutions" / "optim" / "optimizer.py"
STUB = ROOT / "assignments" / "optim" / "optimizer.py"


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
