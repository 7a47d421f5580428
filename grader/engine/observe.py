"""Step 1: run the submission in the sandbox and keep what it saw; nothing is judged here."""

from __future__ import annotations

from dataclasses import dataclass

from grader.checks.findings import Finding, fail
from grader.engine.context import GradingContext
from grader.engine.outcomes import limit_mib, printed_too_much, task_problem
from grader.import_failure import INTEGRITY_KEYS
from grader.models import Limits, add_phases
from grader.sandbox import JobResult, Sandbox, TaskSpec
from grader.submission import Submission


@dataclass(frozen=True)
class Observed:
    """What the sandbox saw of one submission: the job over the lab's cases, the one over
    the hidden cases (None: none, or the import failed), and why the import failed."""

    visible: list[TaskSpec]
    secret: list[TaskSpec]
    job: JobResult
    hidden_job: JobResult | None
    import_problem: Finding | None

    @property
    def probe_s(self) -> float:
        """Seconds the submission's tasks ran."""
        return sum(outcome.wall_s for ran in (self.job, self.hidden_job) if ran is not None
                   for outcome in ran.outcome.tasks)

    @property
    def phases(self) -> dict[str, float]:
        """The sandbox's phases of both jobs, summed (JobResult.phases)."""
        summed: dict[str, float] = {}
        for ran in (self.job, self.hidden_job):
            if ran is not None:
                add_phases(summed, ran.phases)
        return summed


def import_problem(job: JobResult, submission: Submission, limits: Limits, *,
                   who: str) -> Finding | None:
    """Why a job's import of the submission left nothing to judge, or None: a hang told as a
    hang at import, printing past the limit as output (issue 30). `who` is named where the
    finding names a function (an integrity event, a crash)."""
    outcome = job.outcome
    problem = task_problem(outcome.api_status, outcome.api_signal, outcome.api_exit_code,
                           job.api, who, limits, submission, integrity=outcome.api_integrity,
                           detail=outcome.api_detail, importing=True)
    if problem is not None and problem.key not in INTEGRITY_KEYS \
            and printed_too_much(job.log_bytes, limits):
        return fail("import_output_limit", filename=submission.path.name,
                    limit=limit_mib(limits))
    return problem


def observe(sandbox: Sandbox, context: GradingContext, submission: Submission) -> Observed:
    """The lab's cases run in one job; hidden cases, where there are any, in a second job
    after it, so that no child running visible cases holds a hidden case (or could put one
    in a visible message)."""
    lab, limits = context.lab, context.options.limits
    visible, secret = context.tasks()
    target = sandbox.new_submission_file(submission.source)
    hidden_job: JobResult | None = None
    try:
        job = sandbox.run_job(lab=lab.name, submission=target, tasks=visible, limits=limits,
                              search_path=submission.search_path,
                              forbidden_package=lab.forbidden_package)
        problem = import_problem(job, submission, limits, who=submission.path.name)
        if secret and problem is None:
            hidden_job = sandbox.run_job(lab=lab.name, submission=target, tasks=secret,
                                         limits=limits, search_path=submission.search_path)
    finally:
        sandbox.discard(target)
    return Observed(visible, secret, job, hidden_job, problem)
