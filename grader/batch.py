"""Grading a whole class: fast, isolated, resumable.

Each worker thread owns a sandbox worker process (a zygote that imported torch once and forks a
child per submission). Each report is written atomically as soon as it is graded, keyed by a
hash of what was graded, so an interrupted run loses nothing and a re-run skips what is done.
Problems are collected per student; the run itself never stops for one submission.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from grader import __version__
from grader.engine import (
    CheckOptions,
    check_instructor_input,
    effective_rubric,
    error_report,
    grade_submission,
    hidden_plan,
    internal_error,
)
from grader.errors import UsageError
from grader.grades import (
    graded_in,
    iter_reports,
    mixed_labs,
    previous_report,
    save_student,
    write_class_files,
)
from grader.hidden import grading_key
from grader.labs import LAB_FILES, get_lab
from grader.layouts import Found, discover
from grader.models import Report, add_phases
from grader.sandbox import Sandbox
from grader.sandbox.limits import held_slot, release_freed_memory
from grader.sandbox.runner import BATCH_PRELOAD
from grader.student_files import folder_digest, one_line
from grader.submission import Submission, SubmissionError, load_submission
from grader.summary import ClassSummary, standing


@dataclass(frozen=True)
class BatchOptions:
    lab: str
    out: Path
    workers: int = 1
    force: bool = False
    check: CheckOptions = field(default_factory=CheckOptions)
    release: bool = False  # hidden results shown in the students' feedback files
    cluster: str = ""  # a Dask scheduler's address or local[:N] (cluster.py); "": here


@dataclass
class BatchResult:
    students: int = 0
    graded: int = 0
    reused: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)
    elapsed_s: float = 0.0
    summary: ClassSummary | None = None
    # Seconds per phase summed over the submissions graded in this run (Report.phases, and
    # "write": their report and feedback files), and the workers' peak zygote RSS (bench/).
    phases: dict[str, float] = field(default_factory=dict)
    zygote_peak_mib: float = 0.0
    cluster_workers: int = 0  # the Dask workers in use (cluster.py); 0: graded here


Progress = Callable[[str, Report, bool], None]  # (student, report, reused)


def submission_hash(source: str, *, lab: str, options: CheckOptions, folder: str = "") -> str:
    """What a report depends on: the code, everything beside it the code could import or
    open (`folder`: student_files.folder_digest of the student's own folder), the lab, the
    grader and the grading options."""
    digest = hashlib.sha256()
    override = options.rubric_override.model_dump_json() if options.rubric_override else ""
    hidden = grading_key(options.hidden) if options.hidden else ""
    for part in (lab, __version__, options.device, options.lang, options.integrity,
                 options.limits.model_dump_json(), override, hidden, folder, source):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _read(found: Found, filename: str) -> Submission | str:
    """The submission's source, or why it cannot be graded; never raises for any bytes."""
    if found.path is None:
        return found.error
    try:
        submission = load_submission(found.path, filename=filename, own_folder=found.own_folder)
    except SubmissionError as exc:
        return str(exc)
    except Exception as exc:  # a reader's gap must cost one row, not the class
        return one_line(f"{found.path.name}: cannot be read ({type(exc).__name__}: {exc})")
    return submission  # an empty one is the engine's to say (as in check)


def _folder_digest(submission: Submission) -> str:
    """student_files.folder_digest of the student's own folder ("" for a flat class
    folder, whose neighbours the submission cannot import); ValueError or OSError where
    it cannot be read."""
    if submission.search_path is None:
        return ""
    return folder_digest(submission.search_path)


class _Workers:
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


@dataclass(frozen=True)
class Pending:
    """A submission to grade: read, hashed, and not graded before."""

    found: Found
    submission: Submission
    digest: str


def prepare(found: Found, options: BatchOptions) -> tuple[Report, bool] | Pending:
    """(report, reused) where nothing needs to run (unreadable, or graded before with the
    same hash), else what to grade; never raises for a problem of the submission."""
    submission = _read(found, LAB_FILES[options.lab])
    if isinstance(submission, str):
        return grading_failed(found, submission, options), False
    try:
        folder = _folder_digest(submission)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else exc
        return grading_failed(found, one_line(f"{found.student}/ cannot be read ({why})"),
                              options), False
    digest = submission_hash(submission.source, lab=options.lab, options=options.check,
                             folder=folder)
    previous = previous_report(options.out, found.student)
    if not options.force and previous is not None and previous.submission_hash == digest:
        return previous, True
    return Pending(found, submission, digest)


def grading_failed(found: Found, error: str, options: BatchOptions, digest: str = "") -> Report:
    """The error row of a student who could not be graded (`error` says why)."""
    report = error_report(lab=options.lab, submission=one_line(str(found.path or found.student)),
                          error=error, options=options.check)
    return stamped(report, found, digest)


def stamped(report: Report, found: Found, digest: str) -> Report:
    """`report` as the student's, keyed by the hash of what was graded (resume)."""
    return report.model_copy(update={"student": found.student, "submission_hash": digest})


def _grade_one(found: Found, options: BatchOptions, workers: _Workers) -> tuple[Report, bool]:
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


def check_out_folder(options: BatchOptions) -> None:
    """Raise UsageError where --out cannot be written, holds another lab's reports (grading
    into it would overwrite those students' reports and feedback with this lab's), or holds
    reports graded with hidden cases that this run, without --hidden, would drop (unless
    --force): found before anything is graded, never after."""
    out = options.out
    try:  # a folder made and removed where --output would go: nothing is left behind
        place = next(p for p in (out, *out.absolute().parents) if p.exists())
        with tempfile.TemporaryDirectory(dir=place):
            pass
    except OSError as exc:
        raise UsageError(f"--output {out}: cannot write there ({exc.strerror or exc}); choose "
                         "a folder you can write") from None
    graded = graded_in(out)
    labs = {lab for lab, _ in graded}
    if labs - {options.lab}:
        raise UsageError(mixed_labs(out, labs | {options.lab}))
    if (not options.force and options.check.hidden is None
            and any(hidden for _, hidden in graded)):
        raise UsageError(f"{out}: its reports were graded with --hidden cases, which this run "
                         "would drop; pass the same --hidden FILE, or --force to regrade "
                         "without them")


def check_instructor_files(options: BatchOptions) -> None:
    """Raise UsageError for a mistake in the rubric or hidden-cases file, or an --out folder
    of another lab: it stops the run before any student is graded, rather than failing (or
    overwriting) every student."""
    check_instructor_input(options.lab, options.check)  # no torch: a typo is reported at once
    check_out_folder(options)
    lab = get_lab(options.lab)
    effective_rubric(lab, options.check.rubric_override)
    hidden_plan(lab, options.check.hidden)


def grade_class(submissions: Path, *, options: BatchOptions,
                on_progress: Progress | None = None,
                on_start: Callable[[int], None] | None = None) -> BatchResult:
    """Grade every submission under `submissions` into `options.out`: on this machine's
    workers, or on a Dask cluster (`options.cluster`, cluster.py). Either way this process
    is the only one that writes a file."""
    started = time.monotonic()
    check_instructor_files(options)
    students = discover(submissions, filename=LAB_FILES[options.lab])
    result = BatchResult(students=len(students))
    if on_start is not None:
        on_start(len(students))
    if options.cluster:
        from grader.cluster import graded_on_cluster  # Dask only when asked for

        reports = graded_on_cluster(students, options, result)
    else:
        reports = _graded_here(students, options, result)
    try:
        for index, (report, reused) in enumerate(reports, start=1):
            if index % 64 == 0:
                release_freed_memory()  # memory stays flat: the report lives on disk now
            writing = time.monotonic()
            save_student(options.out, report, lang=options.check.lang, release=options.release,
                         reused=reused)
            if not reused:
                add_phases(result.phases, {**report.phases,
                                           "write": time.monotonic() - writing})
            result.reused += reused
            result.graded += not reused and not report.error
            if report.error:
                result.errors.append((report.student, report.error))
            if on_progress is not None:
                on_progress(report.student, report, reused)
    finally:
        try:
            reports.close()  # nothing more starts; what runs finishes, then its workers stop
        finally:
            result.elapsed_s = time.monotonic() - started
            result.summary = _rebuild_class_files(options, students)
    return result


def _rebuild_class_files(options: BatchOptions, students: list[Found]) -> ClassSummary:
    """Gradebook and summary from the reports on disk, even after Ctrl-C: whatever was graded
    is in the gradebook. One report at a time: memory stays flat however large the class."""
    wanted = {s.student for s in students}
    on_disk = {s.student: s for s in map(standing, iter_reports(options.out))
               if s.student in wanted}
    return write_class_files(options.out, [on_disk[s.student] for s in students
                                           if s.student in on_disk],
                             lab=options.lab, lang=options.check.lang)


def _graded_here(students: list[Found], options: BatchOptions, result: BatchResult
                 ) -> Generator[tuple[Report, bool], None, None]:
    """(report, reused) per student as this machine's workers finish them."""
    workers = _Workers(options.lab)
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


def iter_failures(result: BatchResult) -> Iterator[str]:
    for student, error in result.errors:
        yield f"{student}: {error}"
