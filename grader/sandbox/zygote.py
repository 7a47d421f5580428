"""The zygote: imports torch and the probes once, then forks one child per unit.

A fork costs milliseconds where a fresh interpreter costs the torch import (seconds). Two rules
keep forking safe (see shared/notes/sandbox-facts.md): the zygote never runs a parallel torch op
(a forked child would hang on OpenMP), and it never initialises CUDA (the child could not use
it). Children start their own session so a timeout kills the whole process group, and the
zygote is a child subreaper so that daemons a submission detaches are found and killed too.

Protocol: one `Unit` JSON line in on stdin, one `UnitOutcome` JSON line out on stdout.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import select
import signal
import sys
import time
from pathlib import Path

from grader.sandbox.protocol import Unit, UnitOutcome

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def own_children() -> list[int]:
    """Pids whose parent is this process (orphans reparented here included)."""
    pids: list[int] = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            pids += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return pids


def kill_leftovers() -> int:
    """SIGKILL and reap every remaining child; return how many there were."""
    killed = 0
    for _ in range(100):
        pids = own_children()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        for pid in pids:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return killed


def wait_with_timeout(pid: int, timeout_s: float) -> int | None:
    """The child's wait status, or None when it outlived `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    pidfd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if pidfd is not None:
                select.select([pidfd], [], [], left)
            else:
                time.sleep(min(left, 0.005))
    finally:
        if pidfd is not None:
            os.close(pidfd)


def run_one(unit: Unit) -> UnitOutcome:
    from grader.sandbox.child import child_main

    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        child_main(unit)  # never returns
    status = wait_with_timeout(pid, unit.timeout_s)
    timed_out = status is None
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # the child's session: everything it started in it
    if status is None:
        _, status = os.waitpid(pid, 0)
    leftovers = kill_leftovers()
    wall = time.monotonic() - started
    if timed_out:
        return UnitOutcome(unit_id=unit.unit_id, status="timeout", wall_s=wall,
                           leftover_processes=leftovers)
    if os.WIFSIGNALED(status):
        return UnitOutcome(unit_id=unit.unit_id, status="signaled", signal=os.WTERMSIG(status),
                           wall_s=wall, leftover_processes=leftovers)
    code = os.WEXITSTATUS(status)
    has_result = code == 0 and os.path.exists(unit.result_path)
    return UnitOutcome(unit_id=unit.unit_id, status="ok" if has_result else "exited",
                       exit_code=code, wall_s=wall, leftover_processes=leftovers)


def main() -> None:
    protocol_out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints from imports must not corrupt the protocol
    become_subreaper()
    import torch  # noqa: F401 - paid once, inherited by every child

    for lab in sys.argv[1:]:
        probes = importlib.import_module(f"grader.labs.{lab}.probes")
        probes.warm_up()  # pay one-time lazy imports once, not in every child
    protocol_out.write('{"ready": true}\n')
    for line in sys.stdin:
        if not line.strip():
            continue
        outcome = run_one(Unit.model_validate_json(line))
        protocol_out.write(outcome.model_dump_json() + "\n")


if __name__ == "__main__":
    main()
