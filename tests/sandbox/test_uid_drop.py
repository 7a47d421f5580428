"""As root, the child drops to an unprivileged uid before the submission runs."""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from grader.engine import CheckOptions, grade_submission
from grader.sandbox import Sandbox
from grader.sandbox.limits import (
    DEFAULT_UID,
    UIDS_PER_WORKER,
    UidError,
    choose_uid,
    claim_slot,
    configured_uid,
    job_uid,
    python_readable_by_others,
    readable_by_others,
    worker_uid,
)
from grader.sandbox.runner import OWN_FOLDER_LIMIT, _own_copy
from grader.submission import load_submission
from tests.conftest import SOLUTION, grader_cli

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
    if os.geteuid() != 0 or not python_readable_by_others():
        assert choose_uid({}) is None
    else:
        assert choose_uid({}) == DEFAULT_UID
        assert choose_uid({"INPLACE_GRADER_UID": "4321"}, slot=2) == 4321 + 2 * UIDS_PER_WORKER


@pytest.mark.parametrize("value", ["0", "root", "-5", "12x", str(2**31)])
def test_a_uid_that_would_drop_nothing_or_cannot_exist_is_refused(value: str) -> None:
    with pytest.raises(UidError, match="INPLACE_GRADER_UID"):
        configured_uid({"INPLACE_GRADER_UID": value})


def test_the_grader_refuses_a_bad_uid_setting_in_one_line() -> None:
    run = grader_cli("check", str(SOLUTION), env={"INPLACE_GRADER_UID": "0"})
    assert run.returncode == 2
    assert run.stderr.startswith("inplace-grader: error: INPLACE_GRADER_UID='0'")
    assert len(run.stderr.strip().splitlines()) == 1


def test_batch_workers_each_drop_to_a_uid_of_their_own() -> None:
    """Side by side, one student's fork bomb must not use up another's process count, nor
    may one student's code signal another's (same uid: the kernel would let it)."""
    import threading

    from grader.batch.local import Workers

    workers = Workers("optim")
    pairs: list[tuple[int, int]] = []

    def twice() -> None:
        pairs.append((workers.slot()[0], workers.slot()[0]))

    threads = [threading.Thread(target=twice) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    workers.close()  # the slots are free again
    assert all(first == again for first, again in pairs)  # stable within one thread
    slots = [first for first, _ in pairs]
    assert len(set(slots)) == 4  # distinct per thread (as root: locked on this machine)
    assert len({worker_uid(DEFAULT_UID, slot) for slot in slots}) == 4
    with pytest.raises(UidError):
        worker_uid(DEFAULT_UID, 5000)


def test_an_unreadable_own_folder_is_copied_python_files_first(tmp_path: Path) -> None:
    folder = tmp_path / "alice"
    (folder / "pkg").mkdir(parents=True)
    folder.chmod(0o700)
    (folder / "pkg" / "helper.py").write_text("VALUE = 1\n")
    (folder / "notes.txt").write_text("small")
    with (folder / "data.bin").open("wb") as handle:  # sparse: no disk used
        handle.truncate(OWN_FOLDER_LIMIT + 1)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    copied, note = _own_copy(folder, scratch)
    assert copied == scratch
    assert (scratch / "pkg" / "helper.py").read_text() == "VALUE = 1\n"
    assert (scratch / "notes.txt").exists() and not (scratch / "data.bin").exists()
    assert "left out data.bin" in note and "64 MiB" in note
    (folder / "data.bin").unlink()
    again = tmp_path / "again"
    again.mkdir()
    assert _own_copy(folder, again) == (again, "")


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another uid needs root")
@pytest.mark.xdist_group("uid-nobody")  # two workers' jobs never share a uid
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
@pytest.mark.xdist_group("uid-nobody")  # two workers' jobs never share a uid
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


def test_each_job_of_a_worker_has_its_own_uid_and_none_is_nobody() -> None:
    first = worker_uid(DEFAULT_UID, 3)
    uids = [job_uid(first, job) for job in range(UIDS_PER_WORKER)]
    assert len(set(uids)) == UIDS_PER_WORKER  # consecutive jobs never share one
    assert job_uid(first, UIDS_PER_WORKER) == uids[0]  # a range of its own, reused in turn
    assert max(uids) < worker_uid(DEFAULT_UID, 4)  # and no other worker's
    # Ranges that cross nobody (65534) and (uint16) -1 step over them.
    near = [job_uid(65_530, job) for job in range(UIDS_PER_WORKER)]
    assert NOBODY not in near and 65_535 not in near and len(set(near)) == UIDS_PER_WORKER


def test_each_claim_gets_a_slot_no_other_holds_until_it_is_closed(tmp_path: Path) -> None:
    """Two `grade` runs (or Dask workers) on one machine: each sandbox's slot is locked, so
    no two of them drop their children to the same uids."""
    folder = tmp_path / "slots"
    first, held_first = claim_slot(0, folder=folder)
    second, held_second = claim_slot(0, folder=folder)
    assert (first, second) == (0, 1)
    os.close(held_first)
    again, held_again = claim_slot(0, folder=folder)
    assert again == 0  # free once its holder closed it
    for held in (held_second, held_again):
        os.close(held)


def test_a_slot_folder_others_may_write_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "slots"
    folder.mkdir(mode=0o700)
    folder.chmod(0o777)  # anyone could plant a lock there and take every slot
    with pytest.raises(UidError, match="not a private folder"):
        claim_slot(0, folder=folder)


def test_the_slot_locks_live_in_the_first_folder_that_can_be_made(tmp_path: Path) -> None:
    """A read-only /run (a container's) moves the locks to the fixed fallback, never to a
    folder that depends on the environment (two runs must meet in the same one)."""
    from grader.sandbox.limits import slot_folder

    fallback = tmp_path / "fallback"
    assert slot_folder((Path("/proc/inplace-grader-slots"), fallback)) == fallback
    assert (fallback.stat().st_mode & 0o777) == 0o700
