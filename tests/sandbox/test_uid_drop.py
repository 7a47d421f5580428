"""As root, the child drops to an unprivileged uid before the submission runs."""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from grader.engine import CheckOptions, grade_submission
from grader.sandbox import Sandbox
from grader.sandbox.limits import DEFAULT_UID, choose_uid, readable_by_others
from grader.submission import load_submission
from tests.conftest import SOLUTION

NOBODY = 65534
SPY = '''

def zero_grad(params, set_to_none=False):
    import os
    try:
        with open(SECRET) as handle:
            seen = handle.read()
    except OSError as exc:
        seen = type(exc).__name__
    raise RuntimeError(f"uid={os.getuid()} secret={seen} cwd_writable={os.access('.', os.W_OK)}")
'''


def test_the_uid_is_chosen_only_as_root_and_where_python_is_readable(tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    (closed / "inner").mkdir(parents=True)
    closed.chmod(0o700)
    assert not readable_by_others(closed / "inner")
    assert readable_by_others(Path("/usr"))
    assert choose_uid({"INPLACE_GRADER_UID": "off"}) is None
    if os.geteuid() != 0:
        assert choose_uid({}) is None
    elif readable_by_others(Path(os.__file__).parent):
        assert choose_uid({}) == DEFAULT_UID
        assert choose_uid({"INPLACE_GRADER_UID": "4321"}) == 4321


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another uid needs root")
def test_the_submission_runs_as_another_uid_and_cannot_read_root_files() -> None:
    solution = load_submission(SOLUTION, filename="optimizer.py")
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o755)
        secret = Path(folder) / "secret.txt"
        secret.write_text("hidden answers")
        secret.chmod(0o600)
        spy = replace(solution, source=solution.source + SPY.replace("SECRET", repr(str(secret))))
        with Sandbox(["optim"], run_as=NOBODY) as sandbox:
            options = CheckOptions(device="cpu")
            report = grade_submission(solution, lab="optim", options=options, sandbox=sandbox)
            spied = grade_submission(spy, lab="optim", options=options, sandbox=sandbox)
    assert report.score == report.max_score, [c.message for c in report.checks if c.debug]
    assert f"uid drop ({NOBODY})" in report.protections
    assert "process count limit" in report.protections
    said = " ".join(c.message + c.got for c in spied.checks if c.function == "zero_grad")
    assert f"uid={NOBODY} secret=PermissionError cwd_writable=True" in said, said


WRITER = '''

def zero_grad(params, set_to_none=False):
    import helper  # beside the submission, in the student's own folder
    with open("notes.txt", "w") as handle:  # its working folder
        handle.write("scratch")
    raise RuntimeError(f"helper={helper.VALUE} wrote={open('notes.txt').read()}")
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another uid needs root")
def test_after_the_drop_the_child_writes_its_scratch_and_imports_its_own_helpers(
        tmp_path: Path) -> None:
    folder = tmp_path / "alice"  # 0700, like pytest's own folders: unreadable to the uid
    folder.mkdir()
    (folder / "helper.py").write_text("VALUE = 42\n")
    solution = load_submission(SOLUTION, filename="optimizer.py")
    source = solution.source + WRITER
    (folder / "optimizer.py").write_text(source)
    submission = load_submission(folder, filename="optimizer.py")
    with Sandbox(["optim"], run_as=NOBODY) as sandbox:
        report = grade_submission(submission, lab="optim", options=CheckOptions(device="cpu"),
                                  sandbox=sandbox)
    said = " ".join(c.message + c.got for c in report.checks if c.function == "zero_grad")
    assert "helper=42 wrote=scratch" in said, said
    assert "file system view" in report.protections or "uid drop (65534)" in report.protections
    assert not (folder / "notes.txt").exists()
