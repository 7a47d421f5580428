"""What a sandbox result means for a function: observations to judge, or the reason there
are none (a timeout, a signal, an integrity event, a record changed on its way here)."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Any

from grader.checks.findings import Finding, fail
from grader.import_failure import INTEGRITY_KEYS, import_finding
from grader.labs.base import Lab
from grader.models import Limits
from grader.sandbox import JobResult, TaskSpec
from grader.submission import Submission


@dataclass(frozen=True)
class Ran:
    """One task as the engine judges it: why it gave nothing to judge, or its observations."""

    device: str
    problem: Finding | None
    observations: dict[str, Any]
    log: str
    policy_calls: tuple[str, ...] = ()  # as the audit hook relayed them (not the record)


def task_problem(status: str, signal_number: int | None, exit_code: int | None,
                 record: dict[str, Any] | None, function: str, limits: Limits,
                 submission: Submission, *, integrity: list[str] | None = None,
                 detail: str = "", importing: bool = False) -> Finding | None:
    """Why a task (or the import, `importing`) produced nothing to judge, as a finding; None
    if it did.

    Integrity events come first: the zygote heard them before any record existed, so a
    record cannot take them back (see sandbox/protocol.py)."""
    if integrity:
        return integrity_finding(integrity, function=function)
    if status == "protocol":
        return fail("protocol", function=function, debug=detail)
    if status == "timeout" and importing:  # top-level code that never ends (issue 30)
        return fail("import_timeout", filename=submission.path.name, timeout=limits.timeout_s)
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


def printed_too_much(printed_bytes: int, limits: Limits) -> bool:
    """The output reached the file size limit (sandbox/limits.py), measured outside the
    child: it was cut there, and the print that reached it raised OSError (EFBIG)."""
    return printed_bytes >= limits.file_size_bytes


def output_limit(function: str, limits: Limits) -> Finding:
    """Printing past the limit, told as output rather than as the OSError the function raised
    (issue 30); it costs what any run-time failure of the function costs."""
    return fail("output_limit", function=function, limit=limit_mib(limits))


def limit_mib(limits: Limits) -> float:
    return limits.file_size_bytes / 1024**2


def integrity_finding(events: list[str], *, function: str) -> Finding:
    """The finding for what the child's audit hook and tamper watch reported: replaced
    attributes are named as such; anything else (a refused introspection, a torch mode left
    active) as what was used."""
    subclasses = [event.removeprefix("subclass ") for event in events
                  if event.startswith("subclass ")]
    if subclasses:  # a subclass can lie about its values (docs/semantics.md#exact-tensor-types)
        return fail("tensor_subclass", function=function,
                    types=", ".join(dict.fromkeys(subclasses[:3])))
    changed = [event.removeprefix("changed ") for event in events if event.startswith("changed ")]
    if changed:
        return fail("tampered", function=function, names=", ".join(changed[:5]),
                    count=len(changed))
    used = list(dict.fromkeys(event.removeprefix("mode ") for event in events))
    return fail("integrity", function=function, what="; ".join(used[:3]), count=len(used))


def ran_tasks(lab: Lab, job: JobResult, tasks: list[TaskSpec], function: str,
              limits: Limits, submission: Submission) -> list[Ran]:
    """`function`'s tasks in `job`, each with its observations or why it has none."""
    ran = []
    for index, (task, (outcome, record)) in enumerate(zip(tasks, job.tasks, strict=True)):
        if task.function != function:
            continue
        problem = task_problem(outcome.status, outcome.signal, outcome.exit_code, record,
                               function, limits, submission, integrity=outcome.integrity,
                               detail=outcome.detail)
        if index < len(job.output_bytes) and printed_too_much(job.output_bytes[index], limits) \
                and (problem is None or problem.key not in INTEGRITY_KEYS):
            problem = output_limit(function, limits)
        if problem is None and record is None:
            problem = fail("no_result", function=function)
        if problem is None and record is not None:
            problem = malformed(lab, task, record)
        if problem is None and record is not None and task.witness is not None:
            problem = witness_problem(lab, task, record["observations"]["cases"],
                                      job.witnessed[index])
        if problem is None and record is not None:
            problem = measured_outside(task, record["observations"]["cases"],
                                       outcome.outside_peaks_kib)
        ran.append(Ran(task.device, problem,
                       record["observations"] if problem is None and record else {},
                       job.outputs[index], tuple(outcome.policy_calls)))
    return ran


def malformed(lab: Lab, task: TaskSpec, record: dict[str, Any]) -> Finding | None:
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


def witness_problem(lab: Lab, task: TaskSpec, observed: dict[str, Any],
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


def measured_outside(task: TaskSpec, observed: dict[str, Any],
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
