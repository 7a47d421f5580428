"""Step 2: each unit (function, device) judged into scored verdicts: findings and points,
never words (engine/wording.py words them once, at the end).

Fair scoring lives here, in rules no single judge can see:
- a unit that gave nothing to judge is one failed `runtime` row worth every point its checks
  would have earned, so a student's total is the same whether the code ran or not;
- a name missing from the file fails its `api` check and nothing else is graded for it;
- a check passes only where a check it is `shown_by` passed too (settle_function);
- a method failing because it calls a failing lab function says so, and keeps its points
  where the callee was shown to work: the callee already paid (calls_into_failures).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from grader.checks.evidence import Evidence
from grader.checks.findings import CheckName, Finding, Phrase, fail
from grader.engine.context import GradingContext
from grader.engine.observe import Observed, import_problem
from grader.engine.outcomes import Ran, ran_tasks
from grader.engine.rubric import ALL_PARTS, enabled, points, unit_points_split
from grader.hidden import (
    HiddenPlan,
    HiddenVariant,
    iter_variant_checks,
    rename_case,
    variant_observations,
)
from grader.import_failure import FLAGGED_KEYS, not_imported, own_finding, tampered
from grader.labs.base import CheckSpec, Lab
from grader.models import CheckKind, Rubric
from grader.submission import Submission


@dataclass(frozen=True)
class Scored:
    """One row of a report before any words: which check, where, its finding and points."""

    id: str  # as reported: "<check>@<hidden case>" for a hidden case, "<function>.runtime"
    check: str  # the check whose name titles the row ("runtime" for a runtime row)
    function: str
    kind: CheckKind
    device: str
    finding: Finding  # passed, or why not
    score: float
    max_score: float
    hidden: bool = False
    case: str = ""  # the hidden case's name, for a row of a hidden case
    skipped: bool = False
    flagged: bool = False  # failed on what the sandbox saw the code do (or hide)
    blame: Finding | None = None  # says why instead (message, hint): a failing callee,
    # which paid for the mistake where it was shown to work (calls_into_failures)
    log: str = ""  # what the task printed, for the instructor (runtime rows)
    waits_on: tuple[str, ...] = ()  # held right, counts once one of these checks passes

    @property
    def status(self) -> str:
        return "skipped" if self.skipped else "passed" if self.finding.passed else "failed"

    def failed_as(self, finding: Finding) -> Scored:
        """Failed for the reason `finding` gives, keeping what the judge logged."""
        return replace(self, finding=Finding(False, finding.key, finding.params,
                                             self.finding.debug), score=0.0)


class JudgeError(RuntimeError):
    """A judge raised on records already checked against their types: the grader's bug."""


def judge(check: CheckSpec, evidence: Evidence) -> Finding:
    """The check's finding. The records were checked at the trust boundary
    (outcomes.malformed), so an exception here is the grader's own: an internal error
    (exit 3), never feedback that blames the student."""
    try:
        return check.judge(evidence)
    except Exception as exc:
        raise JudgeError(f"check {check.id} raised {type(exc).__name__}: {exc} "
                         "(a bug in the grader; please report it)") from exc


def scored(check: CheckSpec, device: str, finding: Finding, rubric: Rubric,
           plan: HiddenPlan) -> Scored:
    worth = points(rubric, check)
    return Scored(id=check.id, check=check.id, function=check.function, kind=check.kind,
                  device=device, finding=finding, score=worth if finding.passed else 0.0,
                  max_score=worth, hidden=check.id in plan.withheld,
                  flagged=not finding.passed and finding.key in FLAGGED_KEYS)


def hidden_scored(check: CheckSpec, variant: HiddenVariant, device: str, finding: Finding,
                  rubric: Rubric) -> Scored:
    row = scored(check, device, finding, rubric, HiddenPlan())
    return replace(row, id=variant.check_id(check.id), case=variant.name, hidden=True,
                   score=row.score * variant.weight, max_score=row.max_score * variant.weight)


def runtime_rows(context: GradingContext, function: str, device: str, problem: Finding, *,
                 include_shared: bool, log: str = "",
                 parts: frozenset[str] = ALL_PARTS) -> list[Scored]:
    """A failed `runtime` row worth every visible point the unit's checks would have earned,
    and a hidden one for the points of its hidden cases and withheld checks. `parts` says
    which of the unit's points (visible, withheld, variants) this failure cost: the hidden
    cases run in a child of their own, which fails on its own."""
    worth = unit_points_split(context.lab, function, context.rubric, context.plan,
                              shared=include_shared)
    row = Scored(id=f"{function}.runtime", check="runtime", function=function, kind="runtime",
                 device=device, finding=problem, score=0.0, max_score=worth.visible,
                 flagged=problem.key in FLAGGED_KEYS, log=log)
    hidden = (worth.withheld if "withheld" in parts else 0.0) + (
        worth.variants if "variants" in parts else 0.0)
    rows = [row] if "visible" in parts else []
    if hidden:
        rows.append(replace(row, id=f"{row.id}@hidden", max_score=hidden, hidden=True))
    return rows


def failed_everywhere(context: GradingContext, function: str, problem: Finding
                      ) -> list[Scored]:
    """`function` failed on every device for one reason, worth all its points."""
    return [row for name, device, shared in context.units() if name == function
            for row in runtime_rows(context, function, device, problem,
                                    include_shared=shared)]


def skipped_rows(context: GradingContext) -> list[Scored]:
    """The per-device checks of the devices this machine does not have: shown, not scored."""
    return [Scored(id=check.id, check=check.id, function=check.function, kind=check.kind,
                   device=device, finding=fail("skipped_device", device=device), score=0.0,
                   max_score=0.0, skipped=True)
            for device in context.skipped for check in context.lab.checks
            if check.per_device and enabled(check, context.rubric)]


def judge_submission(context: GradingContext, submission: Submission,
                     observed: Observed) -> list[Scored]:
    """Each unit judged into scored rows. What the hidden child says stays with the hidden
    results, but for the forbidden-package calls it makes: a use on hidden cases only is
    still a use."""
    lab, options, job = context.lab, context.options, observed.job
    if observed.import_problem is not None:  # told once, in the report's import_error
        problem = observed.import_problem
        return [row for function in lab.functions for row in failed_everywhere(
            context, function, problem if tampered(problem)
            else not_imported(function, submission))]
    assert job.api is not None
    api, scan = job.api["api"], job.outcome.static
    results: list[Scored] = []
    for function in lab.functions:
        if options.integrity == "fail" and scan.integrity_of(function):
            results += failed_everywhere(context, function, fail(
                "integrity_static", function=function, what=scan.integrity_of(function)[0]))
            continue
        ran = ran_tasks(lab, job, observed.visible, function, options.limits, submission)
        results += function_results(context, function, api, scan.policy.get(function, []), ran,
                                    hidden_ran(context, submission, observed, function, ran))
    # The child names the line of its own copy: told in the student's terms (issue 30).
    results = [replace(row, finding=own_finding(row.finding, submission)) for row in results]
    prerequisites = frozenset(need for check in lab.checks for need in check.shown_by)
    return ordered(lab, calls_into_failures(results, scan.calls, shown_by=prerequisites))


def hidden_ran(context: GradingContext, submission: Submission, observed: Observed,
               function: str, ran: list[Ran]) -> list[Ran] | None:
    """The hidden cases' tasks of `function`, or None where it has none."""
    if not context.plan.for_function(function):
        return None
    hidden_job = observed.hidden_job
    assert hidden_job is not None  # it ran: the visible import succeeded
    limits = context.options.limits
    # Its own child imports the file again: a hang or a flood there is told as the import's.
    hidden_import = import_problem(hidden_job, submission, limits, who=function)
    if hidden_import is not None:
        return [Ran(r.device, hidden_import, {}, hidden_job.log) for r in ran]
    return ran_tasks(context.lab, hidden_job, observed.secret, function, limits, submission)


def function_results(context: GradingContext, function: str, api: dict[str, Any],
                     static: list[str], ran: list[Ran], hidden: list[Ran] | None
                     ) -> list[Scored]:
    """One function's rows on every device: its checks where its task ran, a runtime row
    worth the points of those that could not be judged where it did not; the same for its
    hidden cases, from their own child."""
    lab, rubric, plan = context.lab, context.rubric, context.plan
    results: list[Scored] = []
    policy_calls: list[str] = []
    first_cases: dict[str, Any] = {}
    first_hidden: dict[str, Any] = {}
    unit_keys: list[str] = []
    crashed: set[tuple[str, str]] = set()  # (check, device) that failed because a call raised
    # Where no task of the function (or of its hidden cases) gave observations, the points of
    # its once-per-submission checks go with the first runtime row: the same maximum for all.
    none_usable = all(r.problem is not None for r in ran)
    no_hidden_usable = hidden is not None and all(r.problem is not None for r in hidden)
    plan_cases = tuple(lab.cases(function))
    for index, task in enumerate(ran):
        if task.problem is not None:
            parts = {"visible", "withheld"} | (set() if hidden else {"variants"})
            results += runtime_rows(context, function, task.device, task.problem,
                                    include_shared=none_usable and index == 0,
                                    parts=frozenset(parts))
        else:
            policy_calls += task.policy_calls
            first_cases = first_cases or task.observations["cases"]
            evidence = Evidence(api=api, static_policy=static, policy_calls=[],
                                cases=task.observations["cases"], plan=plan_cases)
            for check in lab.checks_for(function):
                if check.per_device and enabled(check, rubric):
                    finding = judge(check, evidence)
                    unit_keys.append(finding.key)
                    if finding.key == "raised":
                        crashed.add((check.id, task.device))
                    results.append(scored(check, task.device, finding, rubric, plan))
        if hidden is None:
            continue
        secret = hidden[index]
        if secret.problem is not None:
            results += runtime_rows(context, function, secret.device, secret.problem,
                                    include_shared=no_hidden_usable and index == 0,
                                    log=secret.log, parts=frozenset({"variants"}))
            continue
        policy_calls += secret.policy_calls  # a use on hidden cases only is still a use
        first_hidden = first_hidden or secret.observations["cases"]
        evidence = Evidence(api=api, static_policy=static, policy_calls=[],
                            cases=secret.observations["cases"], plan=plan_cases)
        results += hidden_results(context, function, evidence, device=secret.device,
                                  per_device=True)
    if first_cases:
        shared = Evidence(api=api, static_policy=static, policy_calls=policy_calls,
                          cases=first_cases, plan=plan_cases)
        # A function whose every check says "not implemented" earns no api or policy points.
        not_implemented = bool(unit_keys) and all(k == "not_implemented" for k in unit_keys)
        results += [
            scored(check, "cpu", fail("not_implemented", function=function) if not_implemented
                   else judge(check, shared), rubric, plan)
            for check in lab.checks_for(function)
            if not check.per_device and enabled(check, rubric)
        ]
    if first_hidden:
        shared = Evidence(api=api, static_policy=static, policy_calls=policy_calls,
                          cases=first_hidden, plan=plan_cases)
        results += hidden_results(context, function, shared, device="cpu", per_device=False)
    return settle_function(lab, function, api.get(function) is not None, results,
                           crashed=crashed)


def hidden_results(context: GradingContext, function: str, evidence: Evidence, *,
                   device: str, per_device: bool) -> list[Scored]:
    """Each hidden case judged by each check that reads it, given a plan of that case alone."""
    results = []
    for variant, check_id in iter_variant_checks(context.plan, function):
        check = context.lab.check(check_id)
        if check.per_device != per_device or not enabled(check, context.rubric):
            continue
        alone = Evidence(api=evidence.api, static_policy=evidence.static_policy,
                         policy_calls=evidence.policy_calls,
                         cases=variant_observations(evidence.cases, variant),
                         plan=(variant.judged_case,))
        finding = rename_case(judge(check, alone), variant.judged_case["id"], variant.name)
        results.append(hidden_scored(check, variant, device, finding, context.rubric))
    return results


def settle_function(lab: Lab, function: str, defined: bool, results: list[Scored], *,
                    crashed: frozenset[tuple[str, str]] | set[tuple[str, str]] = frozenset()
                    ) -> list[Scored]:
    """What one function's judged rows earn, by two rules no judge can see alone:

    - a name missing from the file fails its `api` check; every other check of it says "not
      graded" (one mistake, told once), the policy check included, which would otherwise pay
      for code that does not exist;
    - a check passes only where one at least of the checks it is `shown_by` passed too, on
      the same device and case: a function that wrote nothing does not "keep its storage".
      A prerequisite that failed with an exception of the student's code (`crashed`: the
      finding "raised") shows nothing either way, so it takes nothing away: the exception
      already costs the checks reading that case. Judged per check, not per case."""
    if not defined:
        missing = fail("not_graded_missing", function=function)
        told = (f"{function}.signature", f"{function}.runtime")
        return [r if r.id.partition("@")[0] in told else r.failed_as(missing) for r in results]
    by_id = {(r.id, r.device): r for r in results}
    # A row students see is settled by rows they see: a withheld check's verdict must not
    # show through (nor cost visible points).
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
            result = replace(result.failed_as(fail("not_shown", function=function,
                                                   needs=either_of(shown_by[:2]))),
                             waits_on=shown_by)
        settled.append(result)
    return settled


def either_of(check_ids: tuple[str, ...]) -> Phrase:
    """“one check” or “one check or the other”, named in the reader's language."""
    quoted = [Phrase("quoted_check", {"check": CheckName(check_id)}) for check_id in check_ids]
    if len(quoted) == 1:
        return quoted[0]
    return Phrase("either_or", {"first": quoted[0], "second": quoted[1]})


def calls_into_failures(results: list[Scored], calls: dict[str, list[str]], *,
                        shown_by: frozenset[str] = frozenset()) -> list[Scored]:
    """A method's check that fails where the method calls a lab function of the same file
    that fails its own checks says so, rather than blaming the method (`SGD.zero_grad`
    calling a broken `zero_grad`). It stays failed, so the student sees it; and where the
    callee was shown to do its job (one of its checks that others are `shown_by`, given in
    `shown_by`, passed on that device), it costs nothing: the callee's own checks already
    cost the mistake (one mistake, one cost; issue 30). A callee that does nothing (a stub,
    a write that changes nothing) was not shown to work, so calling it earns nothing
    (issue 26). `calls`: method to the lab functions its body calls, from the child's scan
    of the source."""
    failing = {r.function for r in results if r.status == "failed" and not r.hidden}
    working = {(r.function, r.device) for r in results if r.status == "passed"
               and not r.hidden and r.id in shown_by}
    settled = []
    for result in results:
        method = result.id.partition("@")[0]
        culprits = [name for name in calls.get(method, []) if name in failing
                    and name != result.function]
        if result.status == "failed" and culprits and result.kind != "runtime":
            paid = (culprits[0], result.device) in working
            result = replace(result, blame=fail("calls_failing", method=method,
                                                callee=culprits[0]),
                             score=result.max_score if paid else result.score)
        settled.append(result)
    return settled


def ordered(lab: Lab, results: list[Scored]) -> list[Scored]:
    """By function, device, then visible before hidden, in the lab's check order."""
    order = {c.id: i for i, c in enumerate(lab.checks)}
    return sorted(results, key=lambda r: (lab.functions.index(r.function) if r.function in
                                          lab.functions else 0, r.device != "cpu", r.hidden,
                                          order.get(r.id.partition("@")[0], -1)))
