"""Memory a submission never wrote reads as NaN in the child, every time (deterministic mode
with fill_uninitialized_memory): a buffer from torch.empty that enters a result is caught
whatever the allocator handed out, not only when that memory happened to be non-zero."""

from __future__ import annotations

from pathlib import Path

from grader.engine import CheckOptions, check_submission
from tests.conftest import SharedSandboxes

SHOWS_EMPTY = '''
import torch

def zero_grad(params, set_to_none=False):
    raise RuntimeError("empty=" + ",".join(str(v) for v in torch.empty(64).tolist()))
'''


def test_torch_empty_reads_as_nan_in_the_child(tmp_path: Path, sandboxes: SharedSandboxes) -> None:
    path = tmp_path / "optimizer.py"
    path.write_text(SHOWS_EMPTY)
    report = check_submission(path, lab="optim", options=CheckOptions(device="cpu"),
                              sandbox=sandboxes("optim", preload=False))
    said = next(c.message for c in report.checks
                if c.function == "zero_grad" and "empty=" in c.message)
    values = said.split("empty=", 1)[1].split(",")
    assert values[:64] == ["nan"] * len(values[:64]) and len(values) >= 8, said
