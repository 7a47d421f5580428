"""Containment without root: a user namespace of the zygote's own gives it the per-child PID
namespaces that root gets directly (containment.enter_user_namespace), so that whatever a
child leaves behind dies with it on a student's laptop too.

Run as root, the test first drops a forked helper to an unused uid, so that the route is the
one a non-root user takes; the helper needs no new interpreter (Python may live under a
folder that uid cannot read)."""

from __future__ import annotations

import ctypes
import os
import select
import signal
import threading
import time
from pathlib import Path

import pytest

from grader.labs import get_lab
from grader.models import Limits
from grader.sandbox import Sandbox, TaskSpec
from grader.sandbox.containment import PidNamespaces, enter_user_namespace, sweep_children
from grader.sandbox.runner import SandboxError

PR_SET_DUMPABLE = 4
UNPRIVILEGED = 64_999  # no account uses it; only a forked helper of this test ever has it
NO_USER_NAMESPACES = 2
SURVIVOR = 3


def _as_zygote_without_root() -> int:
    """In a forked helper: become the unprivileged zygote, fork a child into a namespace of
    its own that leaves a detached grandchild in a session of its own, end the child, and
    report whether the grandchild died with it (the grandchild holds a pipe's only writer, so
    end-of-file on it proves it is gone)."""
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(UNPRIVILEGED)
        os.setuid(UNPRIVILEGED)
        # A uid change leaves a process undumpable, its /proc files root's: an exec'd
        # non-root zygote is dumpable, and must be to write its own uid_map.
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    uid = os.geteuid()
    if not enter_user_namespace():
        return NO_USER_NAMESPACES
    namespaces = PidNamespaces()
    if not namespaces.available or os.geteuid() != uid:
        return NO_USER_NAMESPACES if not namespaces.available else 1
    held_read, held_write = os.pipe()
    started_read, started_write = os.pipe()
    child = namespaces.fork()
    if child == 0:  # pid 1 of its own namespace
        os.close(held_read)
        os.close(started_read)
        if os.fork() == 0:
            os.setsid()  # detached: no group kill reaches it
            os.write(started_write, b"1" if os.getppid() == 1 else b"0")
            time.sleep(60)
            os._exit(0)
        time.sleep(60)
        os._exit(0)
    os.close(held_write)
    os.close(started_write)
    if os.read(started_read, 1) != b"1":
        return 1  # the child was not pid 1 of a namespace of its own
    os.kill(child, 9)
    os.waitpid(child, 0)
    gone = bool(select.select([held_read], [], [], 10)[0]) and os.read(held_read, 1) == b""
    sweep_children()
    return 0 if gone else SURVIVOR


def test_without_root_a_childs_descendants_die_with_it() -> None:
    helper = os.fork()
    if helper == 0:
        code = 1
        try:
            code = _as_zygote_without_root()
        finally:
            os._exit(code)
    _, status = os.waitpid(helper, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == NO_USER_NAMESPACES:
        pytest.skip("this kernel lets no unprivileged process make a user namespace")
    assert code != SURVIVOR, "a detached grandchild outlived its namespace"
    assert code == 0


def _children_of(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    """Running, not a zombie (signal 0 would answer for a zombie too)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


HANGS = """
import time
from pathlib import Path

def zero_grad(params, set_to_none=False):
    {before}
    Path("started").write_text("")  # in its scratch folder: the grader sees it begin
    time.sleep(20)
"""
# What a submission would run to outlive a killed worker: clear the parent-death signal.
CLEARS_DEATH_SIGNAL = ("import ctypes\n    "
                       "ctypes.CDLL(None).prctl(1, 0, 0, 0, 0)  # PR_SET_PDEATHSIG = 0")


@pytest.mark.parametrize("before", ["pass", CLEARS_DEATH_SIGNAL], ids=["hangs", "clears"])
def test_a_running_child_ends_with_its_killed_worker(before: str) -> None:
    """Ctrl-C, or a kill of `grade`, ends the zygotes; a child in the middle of a task that
    hangs must end with its zygote, not sleep on with no one left to stop it, even where it
    tried to clear its parent-death signal. The zygote runs without a namespace of its own,
    so that its process is the one killed here, and the child is killed by nothing else."""
    lab = get_lab("optim")
    sandbox = Sandbox(["optim"], run_as=None, user_namespace=False)
    target = sandbox.new_submission_file(HANGS.format(before=before))
    outcome: list[object] = []

    def grade() -> None:
        try:
            outcome.append(sandbox.run_job(
                lab="optim", submission=target, limits=Limits(timeout_s=30),
                tasks=[TaskSpec("zero_grad", "cpu", lab.cases("zero_grad"))]))
        except SandboxError as exc:
            outcome.append(exc)

    runner = threading.Thread(target=grade)
    runner.start()
    zygote = sandbox._proc.pid
    child = None
    try:
        deadline = time.monotonic() + 60
        while not list(sandbox.workdir.glob("job*/scratch/started")):
            assert time.monotonic() < deadline, "the task never started"
            time.sleep(0.05)
        found = _children_of(zygote)
        assert found, "the worker's child never started the task"
        child = found[0]
        os.kill(zygote, signal.SIGKILL)  # the worker this test started
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "a child outlived its killed worker"
    finally:
        if child is not None and _alive(child):
            os.kill(child, signal.SIGKILL)  # started by this test's worker
        runner.join(timeout=30)
        sandbox.close()
    assert isinstance(outcome[0], SandboxError)
