"""The zygote: imports torch and the probes once, then forks one child per unit.

A fork costs milliseconds where a fresh interpreter costs the torch import (seconds). Two rules
keep forking safe (docs/sandbox.md#fork-safety): the zygote never runs a parallel torch op
(a forked child would hang on OpenMP), and it never initialises CUDA (the child could not use
it). Each child is pid 1 of a PID namespace of its own where the host allows it, and the zygote
is a child subreaper, so that nothing a submission starts outlives its job (containment.py).

Protocol: one `Job` JSON line in on stdin, one `JobOutcome` JSON line out on stdout. The child
reports progress on a pipe of its own; since student code runs in that process, the zygote
believes only what the order of its lines proves (`Progress`), and owns every deadline.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import json
import os
import re
import resource
import select
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from grader.sandbox import outside_meter, wire
from grader.sandbox.containment import (
    PidNamespaces,
    become_subreaper,
    enter_user_namespace,
    sweep_children,
    sweep_uid,
    user_namespaces_work,
)
from grader.sandbox.limits import warm_up_layers
from grader.sandbox.probes_contract import import_probes
from grader.sandbox.protocol import Job, JobOutcome, StaticScan, TaskOutcome

if TYPE_CHECKING:  # child.py imports torch, which must wait for the user namespace
    from grader.sandbox.child import Inherited

LINE_LIMIT = 64 * 1024  # bytes in one progress line; longer is a protocol violation
INTEGRITY_LIMIT = 20  # integrity events kept per task

# The job's phases as the zygote sees them (JobOutcome.phases), summed over its children: the
# fork itself, then each span between two progress lines, named by the line that ends it, then
# the child's exit and its reaping; plus the children's CPU and page faults (wait4). Timing
# only: a child can delay or hasten its lines, never change what is graded.
PHASE_ENDED_BY = {"P": "setup", "I": "import", "E": "import", "S": "between", "D": "tasks"}
PHASES = ("fork", "setup", "import", "between", "tasks", "exit", "reap",
          "child_user", "child_sys", "child_faults")


class ProtocolViolation(Exception):
    """A progress line the protocol does not allow at this point (forged, malformed, late)."""


@dataclass
class Progress:
    """One child's progress lines, accepted only in the order the protocol allows.

    The child runs student code, which can write to this pipe too; so a line is believed only
    where it is the one line that may come next: `P` first (sent before the submission is
    imported), then `I` or `E`, then `S n` for the next task only and `D n` for the task
    started last. `T` lines (the audit hook's) may come at any time after `P`. During a
    task, `M` opens a window of the outside memory meter and `m` closes it (outside_meter.py),
    one at a time and at most WINDOWS_LIMIT a task. Anything else ends the child; see
    protocol.py.
    """

    next_task: int
    tasks: int
    # Task `index`'s record exists and starts with `token` (the one its `D` line holds).
    recorded: Callable[[int, str], bool] = lambda index, token: True
    protections: list[str] | None = None
    static: StaticScan = field(default_factory=StaticScan)
    imported: bool | None = None
    current: int | None = None
    done: list[int] = field(default_factory=list)
    integrity: dict[int | None, list[str]] = field(default_factory=dict)  # None: the job
    calls: dict[int | None, list[str]] = field(default_factory=dict)  # forbidden calls
    windows: dict[int, list[int | None]] = field(default_factory=dict)  # peaks (KiB), by task
    window_open: bool = False

    def accept(self, line: str) -> str:
        """The kind of a valid line (P, I, E, S, D, T); raises ProtocolViolation otherwise."""
        kind, _, rest = line.partition(" ")
        if self.protections is None:
            if kind != "P":
                raise ProtocolViolation(f"expected the child's layers first, got {line[:80]!r}")
            layers, self.static = _first_line(rest)
            self.protections = [str(layer)[:80] for layer in layers][:40]
            return kind
        if kind in ("T", "C"):
            kept = self.integrity if kind == "T" else self.calls
            events = kept.setdefault(self.current, [])
            if len(events) < INTEGRITY_LIMIT:
                events.append(rest[:200])
            return kind
        if kind in ("I", "E") and not rest and self.imported is None:
            self.imported = kind == "I"
            return kind
        if kind == "S" and self.imported and self.current is None and rest == str(self.next_task) \
                and self.next_task < self.tasks:
            self.current = self.next_task
            return kind
        if kind in ("M", "m") and not rest and self.current is not None \
                and self.window_open == (kind == "m"):
            if kind == "M" and len(self.windows.get(self.current, [])) >= \
                    outside_meter.WINDOWS_LIMIT:
                raise ProtocolViolation("more measured calls than the protocol allows")
            self.window_open = kind == "M"
            return kind
        task, _, token = rest.partition(" ")
        if kind == "D" and self.current is not None and task == str(self.current) \
                and not self.window_open:
            if not self.recorded(self.current, token):  # the child sends D after writing it
                raise ProtocolViolation(f"task {self.current} said done before its record")
            self.done.append(self.current)
            self.next_task, self.current = self.current + 1, None
            return kind
        raise ProtocolViolation(f"unexpected progress line {line[:80]!r}")


def _first_line(text: str) -> tuple[list[object], StaticScan]:
    """The layers and the source scan of a `P` line."""
    try:
        value = json.loads(text)
        layers, static = value["layers"], StaticScan.model_validate(value["static"])
    except (ValueError, TypeError, KeyError) as exc:  # ValidationError is a ValueError
        raise ProtocolViolation("malformed layers line") from exc
    if not isinstance(layers, list):
        raise ProtocolViolation("malformed layers line")
    return layers, static


class _Child:
    """One forked child and its progress pipe, read until it ends or a deadline passes."""

    def __init__(self, job: Job, first_task: int, containment: Containment) -> None:
        from grader.sandbox.child import child_main

        read_fd, write_fd = os.pipe()
        answer_read, answer_write = os.pipe()  # the zygote's answers to `M` and `m`
        forking = time.monotonic()
        pid = containment.namespaces.fork()
        if pid == 0:
            os.close(read_fd)
            os.close(answer_write)
            child_main(job, first_task=first_task, progress_fd=write_fd, answer_fd=answer_read,
                       inherited=containment.inherited)  # never returns
        self.forked = time.monotonic()
        self.fork_s = self.forked - forking
        os.close(write_fd)
        os.close(answer_read)
        os.set_blocking(answer_write, False)  # a child that never reads its answers: a violation
        self._answer = answer_write
        self._baseline: int | None = None
        self.pid = pid
        self._pipe = os.fdopen(read_fd, "rb", buffering=0)
        self._pidfd = os.pidfd_open(pid)
        self._buffer = b""
        self._eof = False
        self.status: int | None = None
        self.usage: resource.struct_rusage | None = None  # the child's own CPU, once reaped

    def next_message(self, deadline: float) -> str | None:
        """The next progress line; None when the child ended or the deadline passed. A line
        longer than LINE_LIMIT is a protocol violation (the zygote's memory stays bounded)."""
        while b"\n" not in self._buffer:
            if len(self._buffer) > LINE_LIMIT:
                raise ProtocolViolation("a progress line longer than the protocol allows")
            left = deadline - time.monotonic()
            if left <= 0 or self.status is not None:
                return None
            pipe_fd = self._pipe.fileno()
            waiting = [self._pidfd] if self._eof else [pipe_fd, self._pidfd]
            ready, _, _ = select.select(waiting, [], [], left)
            chunk = self._pipe.read(4096) if pipe_fd in ready else None
            if chunk:
                self._buffer += chunk
                continue
            if chunk == b"":
                # The pipe was closed (by the submission, say) while the process may live on:
                # from here only its end or the deadline counts.
                self._eof = True
            if self._pidfd in ready:
                self._drain()
                _, self.status, self.usage = os.wait4(self.pid, 0)
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace")

    def open_window(self) -> None:
        """`M`: reset the child's peak resident set, then let the call begin."""
        self._baseline = outside_meter.reset_peak(self.pid)
        self._answer_child(outside_meter.UNMEASURED if self._baseline is None
                           else outside_meter.MEASURED)

    def close_window(self) -> int | None:
        """`m`: the child's peak during the window, in KiB above where it started."""
        peak = None if self._baseline is None else outside_meter.peak_kib(self.pid)
        self._answer_child(outside_meter.CLOSED)
        return None if peak is None or self._baseline is None else max(0, peak - self._baseline)

    def _answer_child(self, answer: bytes) -> None:
        try:
            os.write(self._answer, answer)
        except BlockingIOError:
            raise ProtocolViolation("measured calls the child never waited for") from None
        except OSError:
            pass  # the child is gone or closed its end: its end decides the task

    def _drain(self) -> None:
        if self._eof:
            return
        os.set_blocking(self._pipe.fileno(), False)
        # A raw non-blocking read returns None once the pipe is empty.
        while (chunk := self._pipe.read(4096)) and len(self._buffer) <= 2 * LINE_LIMIT:
            self._buffer += chunk

    def stop(self) -> int:
        """Kill the child's session and reap it; its wait status. Where the child is pid 1
        of its own namespace, the kernel ends everything in it as it goes."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)  # it left its group? (never
            # a reused pid: the descriptor names this process, reaped or not)
        if self.status is None:
            _, self.status, self.usage = os.wait4(self.pid, 0)
        self._pipe.close()
        os.close(self._pidfd)
        os.close(self._answer)
        return self.status


def _recorded(path: str, stamp: bytes, token: str) -> bool:
    """A record file is there and starts with this job's nonce, then the task's token (the
    child writes both before `D`, the token drawn after the submission's call returned: a `D`
    forged during the call cannot hold it, even where the zygote reads it only after the
    real record exists)."""
    if not re.fullmatch(r"[0-9a-f]{16}", token):
        return False
    expected = stamp + wire.token_field(token)
    try:
        with open(path, "rb") as handle:
            return handle.read(8 + len(expected))[8:] == expected
    except OSError:
        return False


def _ended(status: int) -> TaskOutcome:
    if os.WIFSIGNALED(status):
        return TaskOutcome(status="signaled", signal=os.WTERMSIG(status))
    return TaskOutcome(status="exited", exit_code=os.WEXITSTATUS(status))


@dataclass
class Containment:
    """What ends a job's processes here, and the names the report gives it."""

    namespaces: PidNamespaces
    inherited: Inherited  # what every child starts with (child.prepare)
    user_namespace: bool = False  # the zygote runs in a user namespace of its own

    def protections(self, job: Job) -> list[str]:
        if self.namespaces.available:
            return ["user namespace", "process namespace"] if self.user_namespace else [
                "process namespace"]
        return ["uid sweep"] if job.run_as is not None else []

    def sweep(self, job: Job) -> int:
        """After each child: a job's own uid is swept where no namespace ended everything,
        then the subreaper sweep catches anything reparented here."""
        if not self.namespaces.available and job.run_as is not None:
            sweep_uid(job.run_as)
        return sweep_children()


def run_job(job: Job, containment: Containment) -> JobOutcome:
    """Run every task of the job, one child at a time; a task that hangs, kills its process or
    breaks the protocol costs only itself: the next child starts at the task after it.

    Deadlines are the zygote's: the import gets one window of `timeout_s` from the fork, and
    each task one window from the moment its `S` line is accepted, which happens once. Only
    the first child's import decides the import's outcome; a later child whose import fails
    costs the task it was started for."""
    outcomes: list[TaskOutcome | None] = [None] * len(job.tasks)
    api_outcome: TaskOutcome | None = None
    protections: list[str] | None = None
    static = StaticScan()
    job_integrity: list[str] = []
    children = leftovers = 0
    next_task = 0
    phases = dict.fromkeys(PHASES, 0.0)
    stamp = wire.stamp(job.nonce)
    while next_task < len(job.tasks) or api_outcome is None:
        child = _Child(job, next_task, containment)
        children += 1
        progress = Progress(next_task=next_task, tasks=len(job.tasks),
                            recorded=lambda index, token: _recorded(
                                job.tasks[index].result_path, stamp, token))
        started = time.monotonic()
        deadline = started + job.timeout_s
        violation = ""
        mark = child.forked
        try:
            while (message := child.next_message(deadline)) is not None:
                kind = progress.accept(message)
                if kind in PHASE_ENDED_BY:
                    now = time.monotonic()
                    phases[PHASE_ENDED_BY[kind]] += now - mark
                    mark = now
                if kind == "M":
                    child.open_window()
                elif kind == "m" and progress.current is not None:
                    progress.windows.setdefault(progress.current, []).append(
                        child.close_window())
                elif kind == "S":
                    started = time.monotonic()
                    deadline = started + job.timeout_s
                elif kind == "D":
                    outcomes[progress.done[-1]] = TaskOutcome(status="ok",
                                                              wall_s=time.monotonic() - started)
        except ProtocolViolation as exc:
            violation = str(exc)
        timed_out = child.status is None and not violation
        stopping = time.monotonic()
        status = child.stop()
        leftovers += containment.sweep(job)
        _add_child_phases(phases, child, exit_s=stopping - mark,
                          reap_s=time.monotonic() - stopping)
        if protections is None and progress.protections is not None:
            protections, static = progress.protections, progress.static
        job_integrity += progress.integrity.get(None, [])
        for index in progress.done:
            done = outcomes[index]
            if done is not None:
                outcomes[index] = done.model_copy(update={
                    "integrity": progress.integrity.get(index, []),
                    "policy_calls": progress.calls.get(index, []),
                    "outside_peaks_kib": progress.windows.get(index, [])})
        if violation:
            failure = TaskOutcome(status="protocol", detail=violation)
        else:
            failure = TaskOutcome(status="timeout") if timed_out else _ended(status)
        current = progress.current
        if current is not None:
            failure = failure.model_copy(update={
                "integrity": progress.integrity.get(current, []),
                "policy_calls": progress.calls.get(current, [])})
        if api_outcome is None:
            if not progress.imported:  # died, hung, broke the protocol or raised at import
                api_outcome = (failure.model_copy(update={"integrity": job_integrity})
                               if progress.imported is None else TaskOutcome(status="ok"))
                break
            api_outcome = TaskOutcome(status="ok")
        elif not progress.imported:  # importing again, for the task after a failed one
            failure = failure if progress.imported is None else TaskOutcome(
                status="no_result", detail="the file failed to import a second time")
        next_task = progress.next_task
        if current is not None:  # this task hung, killed the process or broke the protocol
            outcomes[current] = failure.model_copy(update={"wall_s": time.monotonic() - started})
            next_task = current + 1
        elif violation and progress.done:
            # Between tasks: what wrote it ran during (or after) the task done last, whose
            # `D` may itself have been forged; that task is lost, and the next one runs anew.
            last = progress.done[-1]
            outcomes[last] = failure.model_copy(update={
                "integrity": progress.integrity.get(last, [])})
        elif next_task < len(job.tasks) and (violation or not progress.done):
            # Before its first task, or ended before starting one: the next task is lost, so
            # that no child can loop.
            outcomes[next_task] = failure
            next_task += 1
        # Otherwise it stopped early on purpose (tampering): a fresh child goes on.
    return JobOutcome(
        job_id=job.job_id,
        api_status=api_outcome.status,
        api_exit_code=api_outcome.exit_code,
        api_signal=api_outcome.signal,
        api_integrity=list(dict.fromkeys(job_integrity + api_outcome.integrity)),
        api_detail=api_outcome.detail,
        tasks=[o or TaskOutcome(status="not_run") for o in outcomes],
        children=children,
        leftover_processes=leftovers,
        protections=containment.protections(job) + (protections or []),
        static=static,
        phases={name: round(value, 6) for name, value in phases.items()},
    )


def _add_child_phases(phases: dict[str, float], child: _Child, *, exit_s: float,
                      reap_s: float) -> None:
    """Add one child's fork, exit, reaping and CPU to the job's phases."""
    phases["fork"] += child.fork_s
    phases["exit"] += exit_s
    phases["reap"] += reap_s
    if child.usage is not None:
        phases["child_user"] += child.usage.ru_utime
        phases["child_sys"] += child.usage.ru_stime
        phases["child_faults"] += child.usage.ru_minflt + child.usage.ru_majflt


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m grader.sandbox.zygote")
    parser.add_argument("labs", nargs="*", help="labs whose probes every child inherits")
    parser.add_argument("--user-namespace", action="store_true",
                        help="make the process namespaces from a user namespace (no root)")
    parser.add_argument("--preload", action="append", default=[],
                        help="a module every child inherits loaded (runner.BATCH_PRELOAD)")
    args = parser.parse_args(argv)
    protocol_out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints from imports must not corrupt the protocol
    # First, while this process has one thread (unshare(CLONE_NEWUSER) needs that).
    user_namespace = (args.user_namespace and user_namespaces_work()
                      and enter_user_namespace())
    become_subreaper()
    namespaces = PidNamespaces()
    import torch  # paid once, inherited by every child

    from grader.sandbox import child

    warm_up_layers()
    for lab in args.labs:
        import_probes(lab).warm_up()  # pay one-time lazy imports once, not in every child
    for module in args.preload:
        importlib.import_module(module)
    containment = Containment(namespaces, child.prepare(), user_namespace=user_namespace)
    if torch.cuda.is_initialized():  # children could not use CUDA after this fork
        print("zygote: CUDA was initialised during warm-up; CUDA tasks will fail",
              file=sys.stderr)
    # Objects that exist now are shared with every child; a frozen generation is never
    # traversed by the children's collector, so their pages stay shared (copy-on-write). No
    # collection first, as Python's gc.freeze documentation advises: one slowed the worker's
    # warm-up and spared the children no page faults (docs/sandbox.md#numbers-behind-the-code).
    gc.freeze()
    protocol_out.write('{"ready": true}\n')
    for line in sys.stdin:
        if not line.strip():
            continue
        job = Job.model_validate_json(line)
        # In a namespace of its own the zygote is pid 1 there, a number that in each child's
        # own namespace is the child itself; the children see none of the zygote.
        zygote_pid = 0 if os.getpid() == 1 else os.getpid()
        outcome = run_job(job.model_copy(update={"zygote_pid": zygote_pid}), containment)
        protocol_out.write(outcome.model_dump_json() + "\n")


if __name__ == "__main__":
    main()
