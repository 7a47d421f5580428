"""What happens to one student before any grading: read, hash, reuse or refuse.

Both executors call `prepare` in the grading process, so a submission is read and hashed in
one place, and `grading_failed` gives every problem of one student the same error row.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from grader import __version__
from grader.batch.options import BatchOptions
from grader.engine import CheckOptions, error_report
from grader.grades import previous_report
from grader.hidden import grading_key
from grader.labs import LAB_FILES
from grader.layouts import Found
from grader.models import Report
from grader.student_files import folder_digest, one_line
from grader.submission import Submission, SubmissionError, load_submission


def submission_hash(source: str, *, lab: str, options: CheckOptions, folder: str = "") -> str:
    """What a report depends on: the code, everything beside it the code could import or
    open (`folder`: student_files.folder_digest of the student's own folder), the lab, the
    grader and the grading options."""
    digest = hashlib.sha256()
    override = options.rubric_override.model_dump_json() if options.rubric_override else ""
    hidden = grading_key(options.hidden) if options.hidden else ""
    narrowed = [",".join(sorted(options.functions))] if options.functions else []  # old keys kept
    for part in (lab, __version__, options.device, options.lang, options.integrity,
                 options.limits.model_dump_json(), override, hidden, folder, source, *narrowed):
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
