"""The student's loop: grade a submission, then again each time it is saved, with one sandbox
worker kept warm between runs (torch imported once, in the worker and here).

`watch_submission` delivers each run to a callback as data (`Run`); it prints nothing. File
events come from watchfiles (inotify, FSEvents, ReadDirectoryChangesW), imported here only.
A file or a notebook is watched through its folder, filtered to its name, so that an editor's
save by rename (write a temporary file, move it over) is seen like a write in place.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grader.engine import CheckOptions, DoesNotImport, grade_submission, internal_error
from grader.engine.api import quick_answer
from grader.engine.rubric import check_instructor_input
from grader.errors import UsageError
from grader.labs import LAB_FILES, check_lab_name, infer_lab_name
from grader.models import CheckResult, ImportFailure, Report
from grader.sandbox import Sandbox
from grader.sandbox.runner import BATCH_PRELOAD, SandboxError
from grader.student_files import folder_digest
from grader.submission import Submission, SubmissionError, load_submission

if TYPE_CHECKING:
    from watchfiles import Change

# Editors write a file in bursts (a truncate and a write, a backup and a rename): a run starts
# once no event came for STEP_MS (watchfiles' `step`), and at most DEBOUNCE_MS after the first.
STEP_MS = 25
DEBOUNCE_MS = 1000
# How long a wait for events lasts before the loop looks up (watchfiles' `rust_timeout`); the
# first one also tells that the watcher runs (see NOTE: [a save during the first run]).
WAKE_MS = 500
# What a folder submission's runs ignore besides watchfiles' defaults (caches, VCS, swap files).
IGNORED_FOLDERS = (".ipynb_checkpoints",)


@dataclass(frozen=True)
class Changes:
    """What changed between two graded reports: checks that passed now and failed then, and
    the reverse (a check skipped on either side, or in one report only, is in neither)."""

    newly_passing: tuple[CheckResult, ...]
    newly_failing: tuple[CheckResult, ...]


def changes(previous: Report, current: Report) -> Changes:
    """The checks of `current` whose status flipped since `previous`, by check id and device."""
    before = {(check.id, check.device): check.status for check in previous.checks}

    def flipped(was: str, now: str) -> tuple[CheckResult, ...]:
        return tuple(check for check in current.checks
                     if check.status == now and before.get((check.id, check.device)) == was)

    return Changes(newly_passing=flipped("failed", "passed"),
                   newly_failing=flipped("passed", "failed"))


@dataclass(frozen=True)
class Run:
    """One run of the loop, as `on_run` receives it: a report, or why there is none."""

    number: int  # 1 for the first run, then one more per run delivered
    lab: str
    path: Path  # the submission as given (a file, a folder or a notebook)
    report: Report | None = None  # None: nothing was graded (import_failure or problem says why)
    # A file that does not parse, told without running it (fast answers only).
    import_failure: ImportFailure | None = None
    # One line: why nothing was graded (the file missing mid-save, empty, unreadable; or the
    # grader's own failure, then `error` holds it). The loop waits for the next save.
    problem: str = ""
    error: BaseException | None = None
    # Since the last report that graded something (None: there is none yet, or this run's
    # report graded nothing).
    changes: Changes | None = None


class _Worker:
    """The sandbox of a watch: one zygote for every run, started again if it died."""

    def __init__(self, lab: str, preload: tuple[str, ...]) -> None:
        self._lab, self._preload = lab, preload
        self.sandbox = Sandbox([lab], preload=preload)

    def restart(self) -> None:
        self.sandbox.close()
        self.sandbox = Sandbox([self._lab], preload=self._preload)

    def close(self) -> None:
        self.sandbox.close()


class _Loop:
    """The state between runs: the worker, the content last graded, the last report."""

    def __init__(self, path: Path, *, lab: str, options: CheckOptions, worker: _Worker,
                 fast_answers: bool) -> None:
        self.path, self.lab, self.options = path, lab, options
        self.worker = worker
        self.fast_answers = fast_answers
        self.digest: str | None = None  # of the content last graded (None: grade whatever comes)
        self.baseline: Report | None = None  # the last report that graded something
        self.number = 0

    def run(self) -> Run | None:
        """Grade the submission as it is now; None where its content is the one last graded."""
        started = time.monotonic()
        try:
            submission = load_submission(self.path, filename=LAB_FILES[self.lab])
            digest = _digest(submission, folder=self.path.is_dir())
        except SubmissionError as exc:  # missing mid-save, not text yet, ...: the next save
            return self._problem(str(exc))
        except (OSError, ValueError) as exc:  # a folder that cannot be read or is far too large
            return self._problem(f"{self.path.name}: cannot be read ({exc})")
        if digest == self.digest:
            return None
        self.digest = digest
        try:
            if self.fast_answers:
                quick_answer(submission, self.lab, self.options)
            report = self._graded(submission, started)
        except DoesNotImport as exc:
            return self._deliver(import_failure=exc.failure)
        except SubmissionError as exc:  # empty, or defines none of the lab's names
            return self._deliver(problem=str(exc))
        except UsageError:
            raise  # the instructor's (a hidden case the lab rejects): not the next save's
        except Exception as exc:  # the grader's own failure: told, and the next save retries
            self.digest = None
            self.worker.restart()
            return self._deliver(problem=internal_error(exc), error=exc)
        changed = None
        if not report.error:  # an error report graded nothing: no baseline
            changed = None if self.baseline is None else changes(self.baseline, report)
            self.baseline = report
        return self._deliver(report=report, changes=changed)

    def _graded(self, submission: Submission, started: float) -> Report:
        """The report of `submission`; a worker that died is replaced once and the run retried
        (a zygote killed from outside, or by the machine's memory limit: its pipe is broken
        when the job is sent, or its answer never comes)."""
        try:
            return grade_submission(submission, lab=self.lab, options=self.options,
                                    sandbox=self.worker.sandbox, started=started)
        except (SandboxError, BrokenPipeError):
            self.worker.restart()
            return grade_submission(submission, lab=self.lab, options=self.options,
                                    sandbox=self.worker.sandbox, started=started)

    def _problem(self, problem: str) -> Run | None:
        """A run that read nothing: told once, and whatever is read next is graded, even the
        content graded before the problem."""
        digest = f"problem: {problem}"
        if digest == self.digest:
            return None
        self.digest = digest
        return self._deliver(problem=problem)

    def _deliver(self, *, report: Report | None = None,
                 import_failure: ImportFailure | None = None, problem: str = "",
                 error: BaseException | None = None, changes: Changes | None = None) -> Run:
        self.number += 1
        return Run(number=self.number, lab=self.lab, path=self.path, report=report,
                   import_failure=import_failure, problem=problem, error=error, changes=changes)


def _digest(submission: Submission, *, folder: bool) -> str:
    """What a run grades: the code as the grader reads it (a notebook's code cells, so that
    saving new outputs is no change), and for a folder everything in it the code could import
    or open (student_files.folder_digest)."""
    digest = hashlib.sha256(submission.source.encode("utf-8", "surrogatepass"))
    if folder and submission.search_path is not None:
        digest.update(b"\0" + folder_digest(submission.search_path).encode())
    return digest.hexdigest()


def watched(path: Path) -> tuple[Path, bool, Callable[[Change, str], bool]]:
    """(what to watch, recursively or not, which events count) for a submission at `path`:
    a folder and everything under it, or a file's folder filtered to the file's name."""
    from watchfiles import DefaultFilter

    if path.is_dir():
        folder_filter = DefaultFilter(ignore_dirs=(*DefaultFilter.ignore_dirs, *IGNORED_FOLDERS))
        return path.resolve(), True, folder_filter
    target = path.resolve()

    def same_name(change: Change, name: str) -> bool:
        return Path(name).name == target.name

    return target.parent, False, same_name


def _events(path: Path, stop_event: threading.Event | None, step_ms: int
            ) -> Generator[set[tuple[Change, str]], None, None]:
    """Sets of file events at `path` (an empty set each WAKE_MS without any). Ctrl-C while
    waiting ends it as KeyboardInterrupt out of `next`."""
    try:
        import watchfiles
    except ImportError as exc:  # a dependency, but an install with --no-deps has none
        raise UsageError("--watch needs the watchfiles package: pip install "
                         "'watchfiles>=0.21'") from exc
    root, recursive, event_filter = watched(path)
    return watchfiles.watch(root, watch_filter=event_filter, recursive=recursive,
                            debounce=DEBOUNCE_MS, step=step_ms, rust_timeout=WAKE_MS,
                            yield_on_timeout=True, stop_event=stop_event)


def watch_submission(path: Path, *, lab: str | None = None, options: CheckOptions | None = None,
                     on_run: Callable[[Run], None], stop_event: threading.Event | None = None,
                     fast_answers: bool = False, preload: tuple[str, ...] = BATCH_PRELOAD,
                     step_ms: int = STEP_MS) -> None:
    """Grade the submission at `path`, then again each time it is saved, until `stop_event`
    is set or Ctrl-C comes while waiting for a save; each run goes to `on_run`.

    A run whose content is the one graded last is skipped (an editor that writes twice, a
    save without a change). Nothing the submission holds ends the loop: a file missing or
    half-written mid-save, empty, or that does not parse is a run that says so, and the loop
    waits for the next save. Raised: UsageError for what no save can fix (no such path at
    the start, a lab that cannot be told, the instructor's files), and KeyboardInterrupt for
    Ctrl-C during a run. With `fast_answers`, a file that does not parse is told without
    running it (check_submission). `preload`: what the worker imports once for every run
    (runner.BATCH_PRELOAD: a student who calls torch.optim pays its compiler's import once).
    The worker is closed when this returns or raises.
    """
    options = options or CheckOptions()
    if not path.exists():
        raise SubmissionError(f"{path}: no such file or folder")
    lab_name = check_lab_name(lab) if lab else infer_lab_name(path)
    if lab_name is None:
        raise UsageError(f"cannot tell the lab from {path.name!r}; pass --lab "
                         f"(available: {', '.join(sorted(LAB_FILES))})")
    check_instructor_input(lab_name, options)
    events = _events(path, stop_event, step_ms)
    with contextlib.ExitStack() as stack:
        stack.callback(events.close)  # the watcher, if it started
        worker = _Worker(lab_name, preload)
        stack.callback(worker.close)
        loop = _Loop(path, lab=lab_name, options=options, worker=worker,
                     fast_answers=fast_answers)
        if (first := loop.run()) is not None:
            on_run(first)
        # NOTE: [a save during the first run] The watcher starts at the first `next`, after
        # the first run read the file: a save in between has no event of its own, so the first
        # wake-up (an event, or WAKE_MS without one) compares the content once more.
        looked_again = False
        while True:
            try:
                if not next(events) and looked_again:
                    continue  # WAKE_MS without an event
            except (StopIteration, KeyboardInterrupt):  # stopped, or Ctrl-C while waiting
                return
            looked_again = True
            if (graded := loop.run()) is not None:
                on_run(graded)


__all__ = ["Changes", "Run", "changes", "watch_submission", "watched"]
