"""The library API and its orchestration: grade one submission and return a `Report`.

Flow: resolve the lab and read the submission (light, fast); start the sandbox worker; import
the lab (torch) while the worker boots; run the submission (observe.py); judge and score what
was seen (outcomes.py, scoring.py); find each failure's reproducer (reproduce.py); word the
rows once (wording.py); assemble the report.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from grader import __version__
from grader.checks.findings import fail
from grader.engine.context import CheckOptions, GradingContext
from grader.engine.observe import observe
from grader.engine.reproduce import reproducers
from grader.engine.rubric import check_instructor_input, rubric_key
from grader.engine.scoring import failed_everywhere, judge_submission, skipped_rows
from grader.engine.wording import printed_output, worded
from grader.errors import UsageError
from grader.import_failure import import_failure, import_finding, tampered
from grader.labs import LAB_FILES, check_lab_name, infer_lab_name, lab_functions
from grader.models import CheckResult, ImportFailure, Report
from grader.quick_answers import cannot_define, syntax_error
from grader.sandbox import Sandbox
from grader.student_files import folder_problem, is_text
from grader.submission import Submission, SubmissionError, find_upload, load_submission


class DoesNotImport(Exception):
    """The submission does not parse: told without a worker or torch (quick_answers.py)."""

    def __init__(self, failure: ImportFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def check_submission(path: Path, *, lab: str | None = None,
                     options: CheckOptions | None = None,
                     sandbox: Sandbox | None = None, fast_answers: bool = False) -> Report:
    """Grade one submission (file, folder or notebook) in the sandbox; never runs it here.

    Pass a running `sandbox` to grade many submissions with one worker (its labs must include
    this one); otherwise a worker is started and stopped for this submission. With
    `fast_answers`, what needs no sandbox is raised at once, with no worker and no torch (what
    `check` prints in a fraction of a torch import) instead of returning its report: an empty
    file or one that certainly defines none of the lab's names as SubmissionError, one that
    does not parse as DoesNotImport.
    """
    options = options or CheckOptions()
    started = time.monotonic()
    if not path.exists():
        raise SubmissionError(f"{path}: no such file or folder")
    lab_name = check_lab_name(lab) if lab else infer_lab_name(path)
    if lab_name is None:
        raise UsageError(f"cannot tell the lab from {path.name!r}; pass --lab "
                         f"(available: {', '.join(sorted(LAB_FILES))})")
    check_instructor_input(lab_name, options)
    submission = load_submission(path, filename=LAB_FILES[lab_name])
    if fast_answers:
        quick_answer(submission, lab_name, options)
    return grade_submission(submission, lab=lab_name, options=options, sandbox=sandbox,
                            started=started)


def quick_answer(submission: Submission, lab: str, options: CheckOptions) -> None:
    """Raise what can be told of `submission` without running it (check_submission)."""
    if why := nothing_to_grade(submission):
        raise SubmissionError(f"{submission.path.name} {why}")
    if (error := syntax_error(submission.source)) is not None:
        failure = import_failure(import_finding(error, submission), submission,
                                 {"import_error": error}, lang=options.lang)
        raise DoesNotImport(failure)
    names = lab_functions(lab)
    if cannot_define(submission.source, names, submission.search_path):
        raise SubmissionError(f"{submission.path.name} {defines_none(names)}")


def defines_none(names: list[str]) -> str:
    return f"defines none of the lab's names ({', '.join(names)}): is it the right file?"


def nothing_to_grade(submission: Submission) -> str:
    """Why there is nothing in `submission` to run ("" where there is something)."""
    if submission.source.strip():
        return ""
    return "is empty" if submission.path.suffix != ".ipynb" else "has no code cells"


def grade_submission(submission: Submission, *, lab: str, options: CheckOptions,
                     sandbox: Sandbox | None = None, started: float | None = None) -> Report:
    """Grade an already-read submission (what `check` and the batch `grade` share)."""
    started = time.monotonic() if started is None else started
    if why := nothing_to_grade(submission):
        return _nothing_to_grade(submission, lab, options, why)
    if not submission.source.isascii() and not is_text(submission.source):
        return _nothing_to_grade(submission, lab, options, "holds text that is not Unicode "
                                 "(a lone surrogate): save it as UTF-8")
    with contextlib.ExitStack() as stack:
        if sandbox is None:
            sandbox = stack.enter_context(Sandbox([lab]))
        context = GradingContext.of(lab, options)  # imports torch while the worker boots
        observed = observe(sandbox, context, submission)
    judging = time.monotonic()
    functions = context.lab.functions
    if observed.import_problem is None and observed.job.api is not None and not any(
            observed.job.api["api"].get(name) for name in functions):
        return _nothing_to_grade(submission, lab, options, defines_none(list(functions)))
    rows = judge_submission(context, submission, observed) + skipped_rows(context)
    checks = worded(rows, context.lab, context.lang,
                    reproducers=reproducers(context, observed, rows),
                    notebook=submission.path.suffix == ".ipynb")
    report = _report(context, str(submission.path), checks, started)
    protections = list(dict.fromkeys([*Sandbox.protections, *observed.job.protections]))
    printed = printed_output(observed, limits=options.limits, lang=options.lang)
    problem = observed.import_problem
    failed_import = None if problem is None or tampered(problem) else import_failure(
        problem, submission, observed.job.api, lang=options.lang)
    phases = {**observed.phases, "judge": time.monotonic() - judging}
    return report.model_copy(update={"probe_s": round(observed.probe_s, 4),
                                     "phases": {k: round(v, 6) for k, v in phases.items()},
                                     "import_error": failed_import, "output": printed,
                                     "protections": protections,
                                     "integrity": [*observed.job.outcome.static.anywhere,
                                                   *flagged_at_run_time(checks)]})


def flagged_at_run_time(checks: list[CheckResult]) -> list[str]:
    """The instructor's lines for checks failed on what the sandbox saw while the code ran:
    the static scan reads the source, these are what the code did (or hid)."""
    lines = [f"{check.message} ({check.device})" for check in checks if check.flagged]
    return list(dict.fromkeys(lines))


def grade_upload(folder: Path, *, lab: str, options: CheckOptions) -> Report:
    """What every LMS entry point grades: the student's upload in `folder`, as a report
    whatever the upload holds. Missing, ambiguous or unreadable files, and the grader's own
    failures, are error reports with the reason and the lab's maxima; only the instructor's
    mistakes (a bad rubric or hidden-cases file: a UsageError) are raised."""
    try:
        if problem := folder_problem(folder):  # links out of the upload are never followed
            raise SubmissionError(problem)
        path = find_upload(folder, LAB_FILES[lab], lang=options.lang)
        return check_submission(path, lab=lab, options=options)
    except SubmissionError as exc:
        return error_report(lab=lab, submission=str(folder), error=str(exc), options=options)
    except UsageError:
        raise
    except Exception as exc:  # the grader's own failure: still a report, with the reason
        return error_report(lab=lab, submission=str(folder), error=internal_error(exc),
                            options=options)


def internal_error(exc: BaseException) -> str:
    """How a grader failure reads in a student's report (one line, the same everywhere)."""
    return f"internal error of the grader ({type(exc).__name__}: {exc})"


def _nothing_to_grade(submission: Submission, lab: str, options: CheckOptions,
                      why: str) -> Report:
    """An empty file, or one without any of the lab's names (another lab's file, a wrong
    upload): one line, the same in `check`, `grade` and the LMS entry points."""
    return error_report(lab=lab, submission=str(submission.path),
                        error=f"{submission.path.name} {why}", options=options)


def error_report(*, lab: str, submission: str, error: str, options: CheckOptions) -> Report:
    """A report for a submission that could not be graded at all (unreadable, empty, missing):
    score 0, the reason, and a row per function worth the points it could have earned (the
    runtime rows of a dead submission), so that a gradebook shows the lab's maxima for it."""
    context = GradingContext.of(lab, options)
    problem = fail("not_gradable", error=error)
    rows = [row for function in context.lab.functions
            for row in failed_everywhere(context, function, problem)]
    report = _report(context, submission, worded(rows, context.lab, context.lang),
                     time.monotonic())
    return report.model_copy(update={"error": error})


def _report(context: GradingContext, submission: str, checks: list[CheckResult],
            started: float) -> Report:
    import torch

    return Report(
        lab=context.lab.name,
        submission=submission,
        rubric_key=rubric_key(context.rubric),
        score=round(sum(c.score for c in checks), 6),
        max_score=round(sum(c.max_score for c in checks), 6),
        checks=checks,
        protections=list(Sandbox.protections),
        grader_version=__version__,
        torch_version=torch.__version__,
        elapsed_s=round(time.monotonic() - started, 3),
    )


__all__ = ["DoesNotImport", "check_submission", "error_report", "grade_submission", "grade_upload",
           "internal_error", "nothing_to_grade"]
