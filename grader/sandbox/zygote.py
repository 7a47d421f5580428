"""The zygote: imports torch and the probes once, then forks one child per unit.

A fork costs milliseconds where a fresh interpreter costs the torch import (seconds). Two rules
keep forking safe (see shared/notes/sandbox-facts.md): the zygote never runs a parallel torch op
(a forked child would hang on OpenMP), and it never initialises CUDA (the child could not use
it). Children start their own session so a timeout kills the whole process group, and the
zygote is a child subreaper so that daemons a submission detaches are found and killed too.

Protocol: one `Job` JSON line in on stdin, one `JobOutcome` JSON line out on stdout.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import os
import select
import signal
import sys
import time
from pathlib import Path

from grader.sandbox.limits import release_freed_memory, warm_up_layers
from grader.sandbox.protocol import Job, JobOutcome, TaskOutcome

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


class _Child:
    """One forked child and its progress pipe, read until it ends or a deadline passes."""

    def __init__(self, job: Job, first_task: int) -> None:
        from grader.sandbox.child import child_main

        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            child_main(job, first_task=first_task, progress_fd=write_fd)  # never returns
        os.close(write_fd)
        self.pid = pid
        self._pipe = os.fdopen(read_fd, "rb", buffering=0)
        self._pidfd = os.pidfd_open(pid)
        self._buffer = b""
        self.status: int | None = None

    def next_message(self, deadline: float) -> str | None:
        """The next progress line; None when the child ended or the deadline passed."""
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or self.status is not None:
                return None
            pipe_fd = self._pipe.fileno()
            ready, _, _ = select.select([pipe_fd, self._pidfd], [], [], left)
            chunk = self._pipe.read(4096) if pipe_fd in ready else None
            if chunk:
                self._buffer += chunk
                continue
            if self._pidfd in ready or chunk == b"":
                # Ended (its pipe may stay open in a grandchild): read what is left, reap it.
                self._drain()
                _, self.status = os.waitpid(self.pid, 0)
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace")

    def _drain(self) -> None:
        os.set_blocking(self._pipe.fileno(), False)
        try:
            while chunk := self._pipe.read(4096):
                self._buffer += chunk
        except (BlockingIOError, TypeError):
            pass

    def stop(self) -> int:
        """Kill the child's session and reap it; its wait status."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        if self.status is None:
            _, self.status = os.waitpid(self.pid, 0)
        self._pipe.close()
        os.close(self._pidfd)
        return self.status


def _ended(status: int) -> TaskOutcome:
    if os.WIFSIGNALED(status):
        return TaskOutcome(status="signaled", signal=os.WTERMSIG(status))
    return TaskOutcome(status="exited", exit_code=os.WEXITSTATUS(status))


def run_job(job: Job) -> JobOutcome:
    """Run every task of the job, one child at a time; a task that hangs or kills its process
    costs only itself: the next child starts at the task after it."""
    outcomes: list[TaskOutcome | None] = [None] * len(job.tasks)
    api_outcome: TaskOutcome | None = None
    children = leftovers = 0
    next_task = 0
    while True:
        child = _Child(job, next_task)
        children += 1
        current: int | None = None  # None while importing or between tasks
        import_failed = ran_any = False
        started = time.monotonic()
        deadline = started + job.timeout_s
        while (message := child.next_message(deadline)) is not None:
            if message in ("I", "E"):
                api_outcome = api_outcome or TaskOutcome(status="ok")
                import_failed = message == "E"
            elif message.startswith("S "):
                current, started = int(message[2:]), time.monotonic()
                deadline = started + job.timeout_s
            elif message.startswith("D ") and current is not None:
                outcomes[current] = TaskOutcome(status="ok", wall_s=time.monotonic() - started)
                next_task, current, ran_any = current + 1, None, True
        timed_out = child.status is None
        status = child.stop()
        leftovers += kill_leftovers()
        failure = TaskOutcome(status="timeout") if timed_out else _ended(status)
        if api_outcome is None:  # died or hung while importing: nothing else can run
            api_outcome = failure
            break
        if import_failed:
            break
        if current is not None:  # this task hung or killed the process
            outcomes[current] = failure.model_copy(
                update={"wall_s": time.monotonic() - started})
            next_task = current + 1
        elif not ran_any and next_task < len(job.tasks):
            outcomes[next_task] = failure  # ended before starting any task: do not loop
            next_task += 1
        # Otherwise it stopped early on purpose (tampering): a fresh child goes on.
        if next_task >= len(job.tasks):
            break
    return JobOutcome(
        job_id=job.job_id,
        api_status=api_outcome.status,
        api_exit_code=api_outcome.exit_code,
        api_signal=api_outcome.signal,
        tasks=[o or TaskOutcome(status="not_run") for o in outcomes],
        children=children,
        leftover_processes=leftovers,
    )


def main() -> None:
    protocol_out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints from imports must not corrupt the protocol
    become_subreaper()
    import torch  # paid once, inherited by every child

    warm_up_layers()
    for lab in sys.argv[1:]:
        probes = importlib.import_module(f"grader.labs.{lab}.probes")
        probes.warm_up()  # pay one-time lazy imports once, not in every child
    if torch.cuda.is_initialized():  # children could not use CUDA after this fork
        print("zygote: CUDA was initialised during warm-up; CUDA tasks will fail",
              file=sys.stderr)
    # Objects that exist now are shared with every child; a frozen generation is never
    # traversed by the children's collector, so their pages stay shared (copy-on-write).
    gc.collect()
    release_freed_memory()
    gc.freeze()
    protocol_out.write('{"ready": true}\n')
    for line in sys.stdin:
        if not line.strip():
            continue
        outcome = run_job(Job.model_validate_json(line))
        protocol_out.write(outcome.model_dump_json() + "\n")


if __name__ == "__main__":
    main()
