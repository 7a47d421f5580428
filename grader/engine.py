"""The library API: grade one submission and return a `Report`.

Flow: resolve the lab and read the submission (light, fast); start the sandbox worker; import
the lab (torch) while the worker boots; inspect the submission's API in one child; probe each
function on each device in its own child; judge the observations here, in the grading process.
"""

from __future__ import annotations

import contextlib
import difflib
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from grader import __version__, feedback
from grader.checks.evidence import Evidence
from grader.checks.findings import Finding, Phrase, fail
from grader.errors import UsageError
from grader.hidden import (
    HiddenFile,
    HiddenFileError,
    HiddenPlan,
    HiddenVariant,
    grading_key,
    iter_variant_checks,
    rename_case,
    resolve,
    variant_observations,
)
from grader.import_failure import (
    FLAGGED_KEYS,
    import_failure,
    import_finding,
    not_imported,
    tampered,
)
from grader.labs import LAB_FILES, check_lab_name, get_lab, infer_lab_name, lab_rubric
from grader.labs.base import CheckSpec, Lab
from grader.models import (
    CheckResult,
    Limits,
    Printed,
    Report,
    Rubric,
    RubricOverride,
    add_phases,
)
from grader.sandbox import JobResult, Sandbox, TaskSpec
from grader.student_files import folder_problem, is_text
from grader.submission import Submission, SubmissionError, find_upload, load_submission


@dataclass(frozen=True)
class CheckOptions:
    device: str = "auto"
    limits: Limits = field(default_factory=Limits)
    lang: str = "en"
    rubric_override: RubricOverride | None = None
    hidden: HiddenFile | None = None
    # What the static integrity scan's findings do: "flag" (listed for the instructor, a
    # neutral line for the student) or "fail" (the functions that reach them fail).
    integrity: str = "flag"


def resolve_devices(choice: str) -> tuple[list[str], list[str]]:
    """(devices to grade on, devices reported as skipped)."""
    import torch

    has_cuda = torch.cuda.is_available()
    if choice == "cpu":
        return ["cpu"], [] if has_cuda else ["cuda"]
    if choice == "cuda":
        if not has_cuda:
            raise UsageError("--device cuda: no CUDA device is available here; use --device cpu")
        return ["cuda"], []
    if choice == "auto":
        return (["cpu", "cuda"], []) if has_cuda else (["cpu"], ["cuda"])
    raise UsageError(f"unknown device {choice!r}; choose auto, cpu or cuda")


def effective_rubric(lab: Lab, override: RubricOverride | None) -> Rubric:
    rubric = lab.rubric()
    known = {c.id for c in lab.checks}
    if set(rubric.points) != known:
        missing = sorted(known - set(rubric.points))
        raise RuntimeError(f"rubric of lab {lab.name} does not match its checks: {missing}")
    return overridden(rubric, override)


def overridden(rubric: Rubric, override: RubricOverride | None) -> Rubric:
    """The lab's rubric with an instructor's override applied; UsageError for a key the lab
    does not have, naming the closest ones. Needs only the lab's rubric.toml (no torch), so a
    typo is reported before anything starts."""
    if override is None:
        return rubric
    unknown = sorted(set(override.weights) - set(rubric.points))
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(rubric.points), n=3, cutoff=0.6)
        maybe = f"did you mean {' or '.join(close)}? " if close else ""
        raise UsageError(f"rubric override: unknown check id {unknown[0]!r}; {maybe}the lab's "
                         f"{len(rubric.points)} check ids are listed by `inplace-grader checks "
                         f"--lab {rubric.lab}`")
    unknown_policies = sorted(set(override.policies) - set(rubric.policies))
    if unknown_policies:
        raise UsageError(f"rubric override: unknown policy {unknown_policies[0]!r}; "
                         f"available: {', '.join(sorted(rubric.policies))}")
    return rubric.model_copy(update={
        "points": {**rubric.points, **override.weights},
        "policies": {**rubric.policies, **override.policies},
    })


def check_instructor_input(lab: str, options: CheckOptions) -> None:
    """The checks of a rubric override and a hidden-cases file that need no torch: run first,
    so that a typo is one line in well under a second (the cases of a hidden file are checked
    once the lab is loaded, still before any student is graded)."""
    from grader.hidden import check_against

    rubric = overridden(lab_rubric(lab), options.rubric_override)
    if options.hidden is not None:
        try:
            check_against(options.hidden, lab=lab, check_ids=list(rubric.points))
        except HiddenFileError as exc:
            raise UsageError(str(exc)) from exc


_resolved: dict[tuple[str, str], HiddenPlan] = {}


def hidden_plan(lab: Lab, hidden: HiddenFile | None) -> HiddenPlan:
    """The hidden-cases file resolved against `lab`, once per process (a batch asks per
    submission); a mistake in the file is a usage error."""
    if hidden is None:
        return HiddenPlan()
    key = (lab.name, grading_key(hidden))
    if key not in _resolved:
        try:
            _resolved[key] = resolve(lab, hidden)
        except HiddenFileError as exc:
            raise UsageError(str(exc)) from exc
    return _resolved[key]


def check_submission(path: Path, *, lab: str | None = None,
                     options: CheckOptions | None = None,
                     sandbox: Sandbox | None = None, refuse_empty: bool = False) -> Report:
    """Grade one submission (file, folder or notebook) in the sandbox; never runs it here.

    Pass a running `sandbox` to grade many submissions with one worker (its labs must include
    this one); otherwise a worker is started and stopped for this submission. With
    `refuse_empty`, an empty submission raises SubmissionError at once (no worker, no torch:
    `check` tells it in a fraction of a torch import) instead of returning its error report.
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
    if refuse_empty and (why := nothing_to_grade(submission)):  # no worker, no torch
        raise SubmissionError(f"{submission.path.name} {why}")
    return grade_submission(submission, lab=lab_name, options=options, sandbox=sandbox,
                            started=started)


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
        lab_obj = get_lab(lab)  # imports torch while the worker boots
        devices, skipped = resolve_devices(options.device)
        context = GradingContext(lab_obj, effective_rubric(lab_obj, options.rubric_override),
                                 hidden_plan(lab_obj, options.hidden), tuple(devices), options)
        observed = observe(sandbox, context, submission)
    judging = time.monotonic()
    if observed.import_problem is None and observed.job.api is not None and not any(
            observed.job.api["api"].get(name) for name in lab_obj.functions):
        return _nothing_to_grade(submission, lab, options, "defines none of the lab's names ("
                                 + ", ".join(lab_obj.functions) + "): is it the right file?")
    checks = judge_submission(context, submission, observed) + _skipped(
        lab_obj, skipped, context.rubric, options.lang)
    report = _report(lab, str(submission.path), checks, started)
    protections = list(dict.fromkeys([*Sandbox.protections, *observed.job.protections]))
    printed = [Printed(text=observed.job.log)] if observed.job.log.strip() else []
    printed += [Printed(function=task.function, device=task.device, text=text)  # type: ignore[arg-type]
                for task, text in zip(observed.visible, observed.job.outputs, strict=False)
                if text.strip()]
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
    lab_obj = get_lab(lab)
    devices, _ = resolve_devices(options.device)
    rubric = effective_rubric(lab_obj, options.rubric_override)
    plan = hidden_plan(lab_obj, options.hidden)
    problem = fail("not_gradable", error=error)
    rows = [row for function in lab_obj.functions for index, device in enumerate(devices)
            for row in _runtime_results(lab_obj, function, device, problem, rubric,
                                        options.lang, "", plan, include_shared=index == 0)]
    return _report(lab, submission, rows, time.monotonic()).model_copy(update={"error": error})


def _report(lab: str, submission: str, checks: list[CheckResult], started: float) -> Report:
    import torch

    return Report(
        lab=lab,
        submission=submission,
        score=round(sum(c.score for c in checks), 6),
        max_score=round(sum(c.max_score for c in checks), 6),
        checks=checks,
        protections=list(Sandbox.protections),
        grader_version=__version__,
        torch_version=torch.__version__,
        elapsed_s=round(time.monotonic() - started, 3),
    )


def _enabled(check: CheckSpec, rubric: Rubric) -> bool:
    return check.policy is None or rubric.policies.get(check.policy, True)


class UnitPoints(NamedTuple):
    """A unit's points split by what students see and by which child earns them: `visible`
    and `withheld` checks read the lab's own cases (withheld ones are hidden from students),
    `variants` are the hidden cases' checks, run in a child of their own."""

    visible: float
    withheld: float
    variants: float

    @property
    def hidden(self) -> float:
        return self.withheld + self.variants


ALL_PARTS = frozenset({"visible", "withheld", "variants"})


def unit_points_split(lab: Lab, function: str, rubric: Rubric, plan: HiddenPlan, *,
                      shared: bool) -> UnitPoints:
    """Points of one function on one device: its per-device checks and hidden cases, plus,
    with `shared`, its once-per-submission checks (api, policy)."""
    visible = withheld = variants = 0.0
    for check in lab.checks_for(function):
        if (shared or check.per_device) and _enabled(check, rubric):
            if check.id in plan.withheld:
                withheld += _points(rubric, check)
            else:
                visible += _points(rubric, check)
    for variant, check_id in iter_variant_checks(plan, function):
        check = lab.check(check_id)
        if (shared or check.per_device) and _enabled(check, rubric):
            variants += _points(rubric, check) * variant.weight
    return UnitPoints(visible, withheld, variants)


def unit_points(lab: Lab, function: str, rubric: Rubric, plan: HiddenPlan, *,
                shared: bool) -> float:
    """All the points of one unit, hidden ones included (what an nbgrader cell is worth)."""
    return sum(unit_points_split(lab, function, rubric, plan, shared=shared))


@dataclass(frozen=True)
class _Ran:
    """One task as the engine judges it: why it gave nothing to judge, or its observations."""

    device: str
    problem: Finding | None
    observations: dict[str, Any]
    log: str
    policy_calls: tuple[str, ...] = ()  # as the audit hook relayed them (not the record)


def _ran(lab: Lab, job: JobResult, tasks: list[TaskSpec], function: str,
         limits: Limits, submission: Submission) -> list[_Ran]:
    ran = []
    for index, (task, (outcome, record)) in enumerate(zip(tasks, job.tasks, strict=True)):
        if task.function != function:
            continue
        problem = _problem(outcome.status, outcome.signal, outcome.exit_code, record, function,
                           limits, submission, integrity=outcome.integrity,
                           detail=outcome.detail)
        if problem is None and record is None:
            problem = fail("no_result", function=function)
        if problem is None and record is not None:
            problem = _malformed(lab, task, record)
        if problem is None and record is not None and task.witness is not None:
            problem = _witness_problem(lab, task, record["observations"]["cases"],
                                       job.witnessed[index])
        if problem is None and record is not None:
            problem = _measured_outside(task, record["observations"]["cases"],
                                        outcome.outside_peaks_kib)
        ran.append(_Ran(task.device, problem,
                        record["observations"] if problem is None and record else {},
                        job.outputs[index], tuple(outcome.policy_calls)))
    return ran


def _malformed(lab: Lab, task: TaskSpec, record: dict[str, Any]) -> Finding | None:
    """The child's record checked against its probes' types and its case (labs/records.py):
    the probes write only records that fit, so one that does not was changed on its way here,
    which costs the function and flags the file (`altered_record`)."""
    from grader.labs.records import MalformedRecord, checked  # torch: not at engine import

    if lab.record_type is None:
        return None
    try:
        observed = record["observations"]["cases"]
        if not isinstance(observed, dict):
            raise MalformedRecord("cases: not a mapping")
        for case in task.cases:
            if case["id"] not in observed:
                raise MalformedRecord(f"{case['id']}: missing")
            checked(lab.record_type(task.function, case), observed[case["id"]])
    except (MalformedRecord, KeyError, TypeError) as exc:
        return fail("altered_record", function=task.function, what=str(exc)[:120],
                    debug=f"malformed record: {exc}")
    return None


def _witness_problem(lab: Lab, task: TaskSpec, observed: dict[str, Any],
                     memory: dict[str, list[Any]]) -> Finding | None:
    """Judge on the caller's memory as the grading process read it (sandbox/witness.py): a
    record that disagrees with it was changed on its way here, which fails the function."""
    for case in task.cases:
        if not lab.witnessed(task.function, case) or case["id"] not in observed:
            continue
        final = memory.get(case["id"])
        tensor = ("its arguments" if final is None
                  else lab.apply_witness(task.function, case, observed[case["id"]], final))
        if tensor is not None:
            return fail("witness_disagrees", function=task.function, case=case["id"],
                        tensor=tensor)
    return None


def _measured_outside(task: TaskSpec, observed: dict[str, Any],
                      peaks: list[int | None]) -> Finding | None:
    """Give each observation with measured calls the peak the zygote read for its last one
    (`outside_peak_bytes`, sandbox/outside_meter.py): the judges read the number there, never
    one of the child's. Windows that are not the zygote's, one for one, are an integrity
    finding: a line forged on the progress pipe opened or closed one."""
    from grader.sandbox.outside_meter import peak_bytes, windows_problem

    used = [observed[case["id"]] for case in task.cases
            if "outside_windows" in observed[case["id"]]]
    problem = windows_problem([record["outside_windows"] for record in used], peaks)
    if problem is not None:
        return fail("integrity", function=task.function, what=problem, count=1)
    for record in used:
        windows = record["outside_windows"]
        record["outside_peak_bytes"] = peak_bytes(peaks, windows[-1] if windows else None)
    return None


@dataclass(frozen=True)
class GradingContext:
    """What one submission is graded against, fixed before anything runs: the lab, the
    rubric in force, the hidden plan, the devices and the options (language, limits,
    integrity). Every step below reads it; none changes it."""

    lab: Lab
    rubric: Rubric
    plan: HiddenPlan
    devices: tuple[str, ...]
    options: CheckOptions

    @property
    def lang(self) -> str:
        return self.options.lang

    def tasks(self) -> tuple[list[TaskSpec], list[TaskSpec]]:
        """(the lab's own tasks, the hidden cases' tasks), one per function and device.
        The caller's memory is read back (witnessed) on the CPU only."""
        lab = self.lab

        def witness(device: str) -> Any:
            return lab.witnessed if device == "cpu" else None

        visible = [TaskSpec(function, device, lab.cases(function), witness=witness(device))
                   for function in lab.functions for device in self.devices]
        secret = [TaskSpec(function, device, [v.run_case for v in self.plan.for_function(function)],
                           private=True, witness=witness(device))
                  for function in lab.functions if self.plan.for_function(function)
                  for device in self.devices]
        return visible, secret


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


def observe(sandbox: Sandbox, context: GradingContext, submission: Submission) -> Observed:
    """Step 1: run the submission in the sandbox. The lab's cases run in one job; hidden
    cases, where there are any, in a second job after it, so that no child running visible
    cases holds a hidden case (or could put one in a visible message)."""
    lab, limits = context.lab, context.options.limits
    visible, secret = context.tasks()
    target = sandbox.new_submission_file(submission.source)
    hidden_job: JobResult | None = None
    try:
        job = sandbox.run_job(lab=lab.name, submission=target, tasks=visible, limits=limits,
                              search_path=submission.search_path,
                              forbidden_package=lab.forbidden_package)
        problem = _problem(job.outcome.api_status, job.outcome.api_signal,
                           job.outcome.api_exit_code, job.api, submission.path.name, limits,
                           submission,
                           integrity=job.outcome.api_integrity, detail=job.outcome.api_detail)
        if secret and problem is None:
            hidden_job = sandbox.run_job(lab=lab.name, submission=target, tasks=secret,
                                         limits=limits, search_path=submission.search_path)
    finally:
        sandbox.discard(target)
    return Observed(visible, secret, job, hidden_job, problem)


def judge_submission(context: GradingContext, submission: Submission,
                     observed: Observed) -> list[CheckResult]:
    """Step 2: each unit (function, device) judged into worded, scored check results.
    What the hidden child says stays with the hidden results, but for the forbidden-package
    calls it makes: a use on hidden cases only is still a use."""
    lab, options, job = context.lab, context.options, observed.job
    if observed.import_problem is not None:  # told once, in the report's import_error
        problem = observed.import_problem  # what it printed is the report's `output`
        return [row for function in lab.functions
                for index, device in enumerate(context.devices)
                for row in _runtime_results(
                    lab, function, device,
                    problem if tampered(problem) else not_imported(function, submission),
                    context.rubric, context.lang, "", context.plan, include_shared=index == 0)]
    assert job.api is not None
    api, scan = job.api["api"], job.outcome.static
    results: list[CheckResult] = []
    for function in lab.functions:
        if options.integrity == "fail" and scan.integrity_of(function):
            finding = fail("integrity_static", function=function,
                           what=scan.integrity_of(function)[0])
            results += [row for index, device in enumerate(context.devices)
                        for row in _runtime_results(lab, function, device, finding,
                                                    context.rubric, context.lang, "",
                                                    context.plan, include_shared=index == 0)]
            continue
        ran = _ran(lab, job, observed.visible, function, options.limits, submission)
        results += _function_results(lab, function, api, scan.policy.get(function, []), ran,
                                     _hidden_ran(context, submission, observed, function, ran),
                                     context.rubric, context.lang, context.plan)
    return _ordered(lab, calls_into_failures(results, scan.calls, context.lang))


def _hidden_ran(context: GradingContext, submission: Submission, observed: Observed,
                function: str, ran: list[_Ran]) -> list[_Ran] | None:
    """The hidden cases' tasks of `function`, or None where it has none."""
    if not context.plan.for_function(function):
        return None
    hidden_job = observed.hidden_job
    assert hidden_job is not None  # it ran: the visible import succeeded
    outcome, limits = hidden_job.outcome, context.options.limits
    hidden_import = _problem(outcome.api_status, outcome.api_signal, outcome.api_exit_code,
                             hidden_job.api, function, limits, submission,
                             integrity=outcome.api_integrity, detail=outcome.api_detail)
    if hidden_import is not None:
        return [_Ran(r.device, hidden_import, {}, hidden_job.log) for r in ran]
    return _ran(context.lab, hidden_job, observed.secret, function, limits, submission)


def _function_results(lab: Lab, function: str, api: dict[str, Any], static: list[str],
                      ran: list[_Ran], hidden_ran: list[_Ran] | None, rubric: Rubric, lang: str,
                      plan: HiddenPlan) -> list[CheckResult]:
    """One function's results on every device: its checks where its task ran, a runtime row
    worth the points of those that could not be judged where it did not; the same for its
    hidden cases, from their own child."""
    results: list[CheckResult] = []
    policy_calls: list[str] = []
    first_cases: dict[str, Any] = {}
    first_hidden: dict[str, Any] = {}
    unit_keys: list[str] = []
    crashed: set[tuple[str, str]] = set()  # (check, device) that failed because a call raised
    # Where no task of the function (or of its hidden cases) gave observations, the points of
    # its once-per-submission checks go with the first runtime row: the same maximum for all.
    none_usable = all(r.problem is not None for r in ran)
    no_hidden_usable = hidden_ran is not None and all(r.problem is not None for r in hidden_ran)
    plan_cases = tuple(lab.cases(function))
    for index, task in enumerate(ran):
        if task.problem is not None:
            parts = {"visible", "withheld"} | (set() if hidden_ran else {"variants"})
            results += _runtime_results(lab, function, task.device, task.problem, rubric, lang,
                                        "", plan, include_shared=none_usable and index == 0,
                                        parts=frozenset(parts))
        else:
            policy_calls += task.policy_calls
            first_cases = first_cases or task.observations["cases"]
            evidence = Evidence(api=api, static_policy=static, policy_calls=[],
                                cases=task.observations["cases"], plan=plan_cases)
            for check in lab.checks_for(function):
                if check.per_device and _enabled(check, rubric):
                    finding = _judge(check, evidence)
                    unit_keys.append(finding.key)
                    if finding.key == "raised":
                        crashed.add((check.id, task.device))
                    results.append(_result(check, task.device, finding, rubric, lang, plan,
                                           lab=lab))
        if hidden_ran is None:
            continue
        secret = hidden_ran[index]
        if secret.problem is not None:
            results += _runtime_results(lab, function, secret.device, secret.problem, rubric,
                                        lang, secret.log, plan,
                                        include_shared=no_hidden_usable and index == 0,
                                        parts=frozenset({"variants"}))
            continue
        policy_calls += secret.policy_calls  # a use on hidden cases only is still a use
        first_hidden = first_hidden or secret.observations["cases"]
        evidence = Evidence(api=api, static_policy=static, policy_calls=[],
                            cases=secret.observations["cases"], plan=plan_cases)
        results += _hidden_results(lab, function, evidence, plan, rubric, lang,
                                   device=secret.device, per_device=True)
    if first_cases:
        shared = Evidence(api=api, static_policy=static, policy_calls=policy_calls,
                          cases=first_cases, plan=plan_cases)
        # A function whose every check says "not implemented" earns no api or policy points.
        not_implemented = bool(unit_keys) and all(k == "not_implemented" for k in unit_keys)
        results += [
            _result(check, "cpu", fail("not_implemented", function=function) if not_implemented
                    else _judge(check, shared), rubric, lang, plan, lab=lab)
            for check in lab.checks_for(function)
            if not check.per_device and _enabled(check, rubric)
        ]
    if first_hidden:
        shared = Evidence(api=api, static_policy=static, policy_calls=policy_calls,
                          cases=first_hidden, plan=plan_cases)
        results += _hidden_results(lab, function, shared, plan, rubric, lang,
                                   device="cpu", per_device=False)
    return settle_function(lab, function, api.get(function) is not None, results, lang,
                           crashed=crashed)


def settle_function(lab: Lab, function: str, defined: bool, results: list[CheckResult],
                    lang: str, *, crashed: frozenset[tuple[str, str]] | set[tuple[str, str]]
                    = frozenset()) -> list[CheckResult]:
    """What one function's judged results earn, by two rules no judge can see alone:

    - a name missing from the file fails its `api` check; every other check of it says "not
      graded" (one mistake, told once), the policy check included, which would otherwise pay
      for code that does not exist;
    - a check passes only where one at least of the checks it is `shown_by` passed too, on
      the same device and case: a function that wrote nothing does not "keep its storage".
      A prerequisite that failed with an exception of the student's code (`crashed`: the
      finding "raised") shows nothing either way, so it takes nothing away: the exception
      already costs the checks reading that case. Judged per check, not per case."""
    if not defined:
        missing = feedback.word(fail("not_graded_missing", function=function), lang)
        told = (f"{function}.signature", f"{function}.runtime")
        return [r if r.id.partition("@")[0] in told else _failed_as(r, missing)
                for r in results]
    by_id = {(r.id, r.device): r for r in results}
    # A result students see is settled by results they see: a withheld check's verdict
    # must not show through (nor cost visible points).
    seen = {(r.id, r.device): r for r in results if not r.hidden}
    checks = {check.id: check for check in lab.checks}
    settled = []
    for result in results:
        check_id, _, variant = result.id.partition("@")
        needs = checks.get(check_id)
        shown_by = needs.shown_by if needs else ()
        lookup = by_id if result.hidden else seen
        shown = [(need, result.device) in crashed
                 or (lookup.get((f"{need}@{variant}" if variant else need, result.device))
                     or lookup.get((need, result.device)) or result).status != "failed"
                 for need in shown_by]
        if result.status == "passed" and shown_by and not any(shown):
            quoted = [f"“{feedback.check_name(need, lang)}”" for need in shown_by[:2]]
            names = quoted[0] if len(quoted) == 1 else feedback.ui(
                "either_or", lang, first=quoted[0], second=quoted[1])
            result = _failed_as(result, feedback.word(
                fail("not_shown", function=function, needs=names), lang))
        settled.append(result)
    return settled


def calls_into_failures(results: list[CheckResult], calls: dict[str, list[str]],
                        lang: str) -> list[CheckResult]:
    """A method's check that fails where the method calls a lab function of the same file
    that fails its own checks says so, rather than blaming the method (`SGD.zero_grad`
    calling a broken `zero_grad`). `calls`: method to the lab functions its body calls, from
    the child's scan of the source."""
    failing = {r.function for r in results if r.status == "failed" and not r.hidden}
    settled = []
    for result in results:
        method = result.id.partition("@")[0]
        culprits = [name for name in calls.get(method, []) if name in failing
                    and name != result.function]
        if result.status == "failed" and culprits and result.kind != "runtime":
            wording = feedback.word(fail("calls_failing", method=method, callee=culprits[0]),
                                    lang)
            result = result.model_copy(update={"message": wording.message,
                                               "hint": wording.hint})
        settled.append(result)
    return settled


def named_cases(finding: Finding, lab: Lab, function: str, lang: str) -> Finding:
    """The finding with each case id it names (`case=`, in its phrases too) replaced by the
    case in words (Lab.describe_case): "3 float32 parameters, one with no gradient", not
    `mixed`. An id that is not one of the lab's cases (a hidden case's own name) stays."""
    cases = {case["id"]: case for case in lab.cases(function)}

    def words(params: dict[str, Any]) -> dict[str, Any]:
        named = {}
        for key, value in params.items():
            if isinstance(value, Phrase):
                value = Phrase(value.key, words(value.params))
            elif key == "case" and isinstance(value, str) and value in cases:
                described = [feedback.fill_phrase(p, lang)
                             for p in lab.describe_case(cases[value])]
                value = ", ".join(described) or value
            named[key] = value
        return named

    return Finding(finding.passed, finding.key, words(finding.params), finding.debug)


def _failed_as(result: CheckResult, wording: feedback.Wording) -> CheckResult:
    return result.model_copy(update={
        "status": "failed", "passed": False, "score": 0.0, "message": wording.message,
        "expected": wording.expected, "got": wording.got, "hint": wording.hint})


def _hidden_results(lab: Lab, function: str, evidence: Evidence, plan: HiddenPlan,
                    rubric: Rubric, lang: str, *, device: str, per_device: bool
                    ) -> list[CheckResult]:
    """Each hidden case judged by each check that reads it, given a plan of that case alone."""
    results = []
    for variant, check_id in iter_variant_checks(plan, function):
        check = lab.check(check_id)
        if check.per_device != per_device or not _enabled(check, rubric):
            continue
        alone = Evidence(api=evidence.api, static_policy=evidence.static_policy,
                         policy_calls=evidence.policy_calls,
                         cases=variant_observations(evidence.cases, variant),
                         plan=(variant.judged_case,))
        finding = rename_case(_judge(check, alone), variant.judged_case["id"], variant.name)
        results.append(_hidden_result(check, variant, device, finding, rubric, lang,
                                      lab=lab))
    return results


def _hidden_result(check: CheckSpec, variant: HiddenVariant, device: str, finding: Finding,
                   rubric: Rubric, lang: str, *, lab: Lab | None = None) -> CheckResult:
    result = _result(check, device, finding, rubric, lang, HiddenPlan(), lab=lab)
    return result.model_copy(update={
        "id": variant.check_id(check.id),
        "name": feedback.ui("hidden_case", lang, check=result.name, case=variant.name),
        "score": result.score * variant.weight, "max_score": result.max_score * variant.weight,
        "hidden": True,
    })


class JudgeError(RuntimeError):
    """A judge raised on records already checked against their types: the grader's bug."""


def _judge(check: CheckSpec, evidence: Evidence) -> Finding:
    """The check's finding. The records were checked at the trust boundary (_malformed),
    so an exception here is the grader's own: an internal error (exit 3), never feedback
    that blames the student."""
    try:
        return check.judge(evidence)
    except Exception as exc:
        raise JudgeError(f"check {check.id} raised {type(exc).__name__}: {exc} "
                         "(a bug in the grader; please report it)") from exc


def _ordered(lab: Lab, results: list[CheckResult]) -> list[CheckResult]:
    """By function, device, then visible before hidden, in the lab's check order."""
    order = {c.id: i for i, c in enumerate(lab.checks)}
    return sorted(results, key=lambda r: (lab.functions.index(r.function) if r.function in
                                          lab.functions else 0, r.device != "cpu", r.hidden,
                                          order.get(r.id.partition("@")[0], -1)))


def _problem(status: str, signal_number: int | None, exit_code: int | None,
             record: dict[str, Any] | None, function: str, limits: Limits,
             submission: Submission, *, integrity: list[str] | None = None,
             detail: str = "") -> Finding | None:
    """Why a task (or the import) produced nothing to judge, as a finding; None if it did.

    Integrity events come first: the zygote heard them before any record existed, so a
    record cannot take them back (see sandbox/protocol.py)."""
    if integrity:
        return integrity_finding(integrity, function=function)
    if status == "protocol":
        return fail("protocol", function=function, debug=detail)
    if status == "timeout":
        return fail("timeout", function=function, timeout=limits.timeout_s)
    if status == "signaled":
        number = signal_number or 0
        name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else "?"
        return fail("signaled", function=function, signal=number, signal_name=name)
    if status == "exited":
        return fail("exited", function=function, exit_code=exit_code)
    if status != "ok" or record is None:
        return fail("no_result", function=function)
    error = record.get("import_error")
    if error is not None:
        return import_finding(error, submission)
    return None


def integrity_finding(events: list[str], *, function: str) -> Finding:
    """The finding for what the child's audit hook and tamper watch reported: replaced
    attributes are named as such; anything else (a refused introspection, a torch mode left
    active) as what was used."""
    subclasses = [event.removeprefix("subclass ") for event in events
                  if event.startswith("subclass ")]
    if subclasses:  # SPEC: exact tensor types; a subclass can lie about its values
        return fail("tensor_subclass", function=function,
                    types=", ".join(dict.fromkeys(subclasses[:3])))
    changed = [event.removeprefix("changed ") for event in events if event.startswith("changed ")]
    if changed:
        return fail("tampered", function=function, names=", ".join(changed[:5]),
                    count=len(changed))
    used = list(dict.fromkeys(event.removeprefix("mode ") for event in events))
    return fail("integrity", function=function, what="; ".join(used[:3]), count=len(used))


def _points(rubric: Rubric, check: CheckSpec) -> float:
    return float(rubric.points[check.id])


def _result(check: CheckSpec, device: str, finding: Finding, rubric: Rubric,
            lang: str, plan: HiddenPlan, *, lab: Lab | None = None) -> CheckResult:
    points = _points(rubric, check)
    if lab is not None and not finding.passed:
        finding = named_cases(finding, lab, check.function, lang)
    wording = (feedback.word(finding, lang, lab=lab.name if lab else "")
               if not finding.passed else None)
    return CheckResult(
        id=check.id, name=feedback.check_name(check.id, lang), function=check.function,
        kind=check.kind, device=device,  # type: ignore[arg-type]
        status="passed" if finding.passed else "failed", passed=finding.passed,
        score=points if finding.passed else 0.0, max_score=points,
        message=wording.message if wording else "", expected=wording.expected if wording else "",
        got=wording.got if wording else "", hint=wording.hint if wording else "",
        debug=finding.debug, hidden=check.id in plan.withheld,
        flagged=not finding.passed and finding.key in FLAGGED_KEYS,
    )


def _runtime_results(lab: Lab, function: str, device: str, problem: Finding, rubric: Rubric,
                     lang: str, log: str, plan: HiddenPlan, *, include_shared: bool,
                     parts: frozenset[str] = ALL_PARTS) -> list[CheckResult]:
    """A failed `runtime` row worth every visible point the unit's checks would have earned,
    and a hidden one for the points of its hidden cases and withheld checks: a student's
    feedback then shows the same total whether the code ran or not. `parts` says which of
    the unit's points (visible, withheld, variants) this failure cost: the hidden cases run
    in a child of their own, which fails on its own."""
    points = unit_points_split(lab, function, rubric, plan, shared=include_shared)
    wording = feedback.word(named_cases(problem, lab, function, lang), lang, lab=lab.name)
    row = CheckResult(
        id=f"{function}.runtime", name=feedback.check_name("runtime", lang, function=function),
        function=function, kind="runtime", device=device,  # type: ignore[arg-type]
        status="failed", passed=False, score=0.0, max_score=points.visible,
        message=wording.message.replace("{function}", function), expected=wording.expected,
        got=wording.got, hint=wording.hint, debug="\n".join(p for p in (problem.debug, log) if p),
        flagged=problem.key in FLAGGED_KEYS,
    )
    hidden = (points.withheld if "withheld" in parts else 0.0) + (
        points.variants if "variants" in parts else 0.0)
    rows = [row] if "visible" in parts else []
    if hidden:
        rows.append(row.model_copy(update={
            "id": f"{row.id}@hidden", "max_score": hidden, "hidden": True,
            "name": feedback.ui("hidden_runtime", lang, check=row.name),
        }))
    return rows


def _skipped(lab: Lab, devices: list[str], rubric: Rubric, lang: str) -> list[CheckResult]:
    skipped = []
    for device in devices:
        wording = feedback.word(fail("skipped_device", device=device), lang)
        skipped += [
            CheckResult(id=check.id, name=feedback.check_name(check.id, lang),
                        function=check.function, kind=check.kind,
                        device=device,  # type: ignore[arg-type]
                        status="skipped", passed=None, score=0.0, max_score=0.0,
                        message=wording.message)
            for check in lab.checks if check.per_device and _enabled(check, rubric)
        ]
    return skipped
