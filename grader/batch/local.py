"""The local executor: this machine's worker threads, each with a sandbox of its own.

Each worker thread owns a sandbox worker process (a zygote that imported torch once and forks a
child per submission) and a uid slot, so that no two threads' children share a uid.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed

from grader.batch.options import BatchOptions, BatchResult, Graded
from grader.batch.prepare import Pending, grading_failed, prepare, stamped
from grader.engine import grade_submission, internal_error
from grader.errors import UsageError
from grader.layouts import Found
from grader.models import Report
from grader.sandbox import Sandbox
from grader.sandbox.limits import held_slot
from grader.sandbox.runner import BATCH_PRELOAD


class LocalExecutor:
    """Grade on this machine, `options.workers` submissions at a time."""

    def graded(self, students: list[Found], options: BatchOptions, result: BatchResult
               ) -> Graded:
        return _graded_here(students, options, result)


class Workers:
    """One sandbox per worker thread, started on first use and all closed at the end. Each
    thread holds a uid slot of its own (limits.held_slot), so its children drop to uids no
    other worker's use, in this run or another one on this machine."""

    def __init__(self, lab: str) -> None:
        self._lab = lab
        self._local = threading.local()
        self._all: list[Sandbox] = []
        self._held: list[int] = []
        self._unlocked = 0
        self._lock = threading.Lock()

    def slot(self) -> tuple[int, int | None]:
        """This thread's (slot, the descriptor that holds it)."""
        if getattr(self._local, "slot", None) is None:
            with self._lock:
                slot, held = held_slot()
                if held is None:  # no uid drop without root: one number per thread will do
                    slot = self._unlocked
                    self._unlocked += 1
                else:
                    self._held.append(held)
                self._local.slot = (slot, held)
        claimed: tuple[int, int | None] = self._local.slot
        return claimed

    def sandbox(self) -> Sandbox:
        sandbox = getattr(self._local, "sandbox", None)
        if sandbox is None:
            slot, held = self.slot()  # its zygote holds the slot too, for as long as it lives
            sandbox = Sandbox([self._lab], uid_slot=slot, preload=BATCH_PRELOAD, hold=held)
            self._local.sandbox = sandbox
            with self._lock:
                self._all.append(sandbox)
        return sandbox

    def replace(self) -> None:
        """After a worker failure: close this thread's sandbox, a fresh one starts next time."""
        sandbox = getattr(self._local, "sandbox", None)
        if sandbox is not None:
            sandbox.close()
            self._local.sandbox = None

    def close(self) -> float:
        """Close every sandbox; the largest peak RSS of their zygotes, in MiB."""
        with self._lock:
            try:
                for sandbox in self._all:
                    sandbox.close()
            finally:
                for held in self._held:
                    os.close(held)  # the slots are free again
                self._held = []
            return max((sandbox.peak_mib for sandbox in self._all), default=0.0)


def _grade_one(found: Found, options: BatchOptions, workers: Workers) -> tuple[Report, bool]:
    """(report, reused) for one student; never raises for a problem of the submission."""
    pending = prepare(found, options)
    if not isinstance(pending, Pending):
        return pending
    try:
        report = grade_submission(pending.submission, lab=options.lab, options=options.check,
                                  sandbox=workers.sandbox())
    except UsageError:  # the machine's, not the student's (no uid slot free): stop the run
        raise
    except Exception as exc:  # the grader's own failure: this student gets an error row
        workers.replace()
        return grading_failed(found, internal_error(exc), options,
                              pending.digest), False
    return stamped(report, found, pending.digest), False


def _graded_here(students: list[Found], options: BatchOptions, result: BatchResult) -> Graded:
    """(report, reused) per student as this machine's workers finish them."""
    workers = Workers(options.lab)
    try:
        with ThreadPoolExecutor(max_workers=max(1, options.workers)) as pool:
            pending = {pool.submit(_grade_one, found, options, workers) for found in students}
            try:
                for future in as_completed(list(pending)):
                    pending.discard(future)  # its report is the caller's now, then on disk
                    yield future.result()
            finally:  # interrupted, or closed by the caller: nothing more starts
                for future in pending:
                    future.cancel()
    finally:
        result.zygote_peak_mib = workers.close()
