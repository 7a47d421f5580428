"""The zygote believes a task done only on proof its child cannot forge: a `D` line whose
token is the one the task's record starts with, drawn after the submission's call returned.
Read late (a loaded machine), a `D` the submission wrote during its call still fails its own
task, never the next one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.sandbox import wire
from grader.sandbox.zygote import Progress, ProtocolViolation, _recorded

NONCE = "ab" * 16
TOKEN = "0123456789abcdef"
LAYERS = "P " + json.dumps({"layers": [], "static": {}})


def progress_over(record: Path) -> Progress:
    """A child's progress, with task 0's record already on disk (the zygote read late)."""
    record.write_bytes(wire.dumps({"nonce": NONCE, "token": TOKEN, "observations": {}}))
    progress = Progress(next_task=0, tasks=2, recorded=lambda index, token: _recorded(
        str(record), wire.stamp(NONCE), token))
    for line in (LAYERS, "I", "S 0"):
        progress.accept(line)
    return progress


@pytest.mark.parametrize("forged", ["D 0", "D 0 ", "D 0 fedcba9876543210", "D 0 0123"])
def test_a_done_line_without_the_records_token_fails_its_own_task(tmp_path: Path,
                                                                    forged: str) -> None:
    progress = progress_over(tmp_path / "task0.record")
    with pytest.raises(ProtocolViolation, match="task 0 said done before its record"):
        progress.accept(forged)
    assert progress.current == 0 and progress.done == []  # task 1 is never blamed


def test_the_childs_own_done_line_is_believed(tmp_path: Path) -> None:
    progress = progress_over(tmp_path / "task0.record")
    assert progress.accept(f"D 0 {TOKEN}") == "D"
    assert progress.done == [0] and progress.next_task == 1


@given(st.text(alphabet="0123456789abcdef ", max_size=40))
def test_no_other_token_is_believed(guess: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        progress = progress_over(Path(folder) / "task0.record")
        if guess == TOKEN:
            return
        with pytest.raises(ProtocolViolation):
            progress.accept(f"D 0 {guess}")
