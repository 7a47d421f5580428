"""Grading a whole class: fast, isolated, resumable.

Each report is written atomically as soon as it is graded (grades.py), keyed by a hash of
what was graded, so an interrupted run loses nothing and a re-run skips what is done.
Problems are collected per student; the run itself never stops for one submission. Where the
submissions are graded is an executor's business (batch/local.py, batch/cluster.py): the
run reads the class, checks the instructor's files and writes every file.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from grader.batch.local import LocalExecutor
from grader.batch.options import BatchOptions, BatchResult, Executor, Progress
from grader.batch.prepare import Pending, prepare, submission_hash
from grader.engine import check_instructor_input, effective_rubric, hidden_plan
from grader.engine.rubric import rubric_in_force, rubric_key
from grader.errors import UsageError
from grader.grades import graded_in, iter_reports, mixed_labs, save_student, write_class_files
from grader.labs import LAB_FILES, get_lab
from grader.layouts import Found, discover
from grader.models import add_phases
from grader.sandbox.limits import release_freed_memory
from grader.summary import ClassSummary, standing

__all__ = ["BatchOptions", "BatchResult", "Executor", "LocalExecutor", "Pending",
           "check_instructor_files", "grade_class", "iter_failures", "prepare",
           "submission_hash"]


def check_out_folder(options: BatchOptions) -> None:
    """Raise UsageError where --out cannot be written, holds another lab's reports (grading
    into it would overwrite those students' reports and feedback with this lab's), or holds
    reports graded with hidden cases that this run, without --hidden, would drop, or with
    another rubric that this run would replace (unless --force): found before anything is
    graded, never after."""
    out = options.out
    try:  # a folder made and removed where --output would go: nothing is left behind
        place = next(p for p in (out, *out.absolute().parents) if p.exists())
        with tempfile.TemporaryDirectory(dir=place):
            pass
    except OSError as exc:
        raise UsageError(f"--output {out}: cannot write there ({exc.strerror or exc}); choose "
                         "a folder you can write") from None
    graded = graded_in(out)
    labs = {report.lab for report in graded}
    if labs - {options.lab}:
        raise UsageError(mixed_labs(out, labs | {options.lab}))
    if options.force:
        return
    if options.check.hidden is None and any(report.hidden for report in graded):
        raise UsageError(f"{out}: its reports were graded with --hidden cases, which this run "
                         "would drop; pass the same --hidden FILE, or --force to regrade "
                         "without them")
    key = rubric_key(rubric_in_force(options.lab, options.check.rubric_override))
    if any(report.rubric_key not in ("", key) for report in graded):
        raise UsageError(f"{out}: its reports were graded with another rubric, which this run "
                         "would replace; pass the same --rubric FILE, or --force to regrade "
                         "with this one")


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
                executor: Executor | None = None, on_progress: Progress | None = None,
                on_start: Callable[[int], None] | None = None) -> BatchResult:
    """Grade every submission under `submissions` into `options.out`: on this machine's
    workers (the default executor), or on a Dask cluster (batch/cluster.py ClusterExecutor).
    Either way this process is the only one that writes a file."""
    started = time.monotonic()
    check_instructor_files(options)
    students = discover(submissions, filename=LAB_FILES[options.lab])
    result = BatchResult(students=len(students))
    if on_start is not None:
        on_start(len(students))
    reports = (executor or LocalExecutor()).graded(students, options, result)
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


def iter_failures(result: BatchResult) -> Iterator[str]:
    for student, error in result.errors:
        yield f"{student}: {error}"
