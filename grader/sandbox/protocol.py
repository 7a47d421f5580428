"""Messages between the grading process and the zygote: one JSON line each way per job.

A job is one submission: the child imports it once, describes its API, then runs one task per
(lab function, device), reporting progress on a private pipe so the zygote can give each task
its own time limit and, when a task hangs or kills the process, start a fresh child for the
tasks after it.

The progress pipe is written by a process that runs student code, so the zygote trusts nothing
on it beyond what the order of lines proves (see `Progress` in zygote.py): one line each, in
this order, or the child is stopped and the task in progress fails with status "protocol":

    P <json>        the layers the child applied and its scan of the source (StaticScan),
                    sent before the submission is imported
    I | E           the import succeeded | failed
    S <n>           task n started (n is the next task, each once)
    D <n> <token>   task n done (n is the task started last); its record, written just
                    before, starts with the same fresh token: a `D` the submission wrote
                    early cannot hold a token drawn after its call returned, however late
                    the zygote reads it
    T <text>        an integrity event (audit hook), at any time after P
    C <text>        a call into the forbidden package (audit hook), at any time after P
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

OutcomeStatus = Literal["ok", "timeout", "signaled", "exited", "no_result", "not_run",
                        "protocol"]


class StaticScan(BaseModel):
    """What the child's scan of the source found before the submission was imported
    (checks/source.py): the forbidden package's uses and the integrity findings, by lab name;
    integrity findings outside any definition reach every name."""

    model_config = ConfigDict(extra="forbid")

    policy: dict[str, list[str]] = Field(default_factory=dict)
    integrity: dict[str, list[str]] = Field(default_factory=dict)
    module: list[str] = Field(default_factory=list)
    anywhere: list[str] = Field(default_factory=list, description="Every finding, for the "
                                "instructor (a helper no lab name calls included).")
    calls: dict[str, list[str]] = Field(default_factory=dict, description=(
        "`Class.method` to the lab functions it calls by name (checks/source.py)."))
    error: str = Field(default="", description="Why the source could not be scanned.")

    def integrity_of(self, name: str) -> list[str]:
        return self.integrity.get(name, []) + self.module


class Task(BaseModel):
    """Probe one lab function on one device."""

    model_config = ConfigDict(extra="forbid")

    function: str
    device: str = "cpu"
    cases: list[dict[str, Any]] = Field(default_factory=list)
    result_path: str
    witness_path: str = Field(default="", description=(
        "The arena the task's in-place inputs live in (sandbox/witness.py); none if empty."))
    cases_path: str = Field(default="", description=(
        "Cases in a file the child reads before its file-system view closes (hidden cases:"
        " never in the zygote's memory, so never in another job's child)."))
    output_path: str = Field(default="", description=(
        "Where the task's own prints go (stdout and stderr): shown per function by --debug."))


class Job(BaseModel):
    """All the untrusted work for one submission."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    lab: str
    submission_path: str
    search_path: str = Field(default="", description="The student's folder, importable.")
    api_path: str
    log_path: str
    nonce: str
    forbidden_package: str = Field(default="", description="Scanned for in the source.")
    scratch_path: str = Field(default="", description="The child's working folder.")
    run_as: int | None = Field(default=None, description="Unprivileged uid for the child.")
    grader_pid: int = Field(default=0, description="The grading process: no signals to it.")
    zygote_pid: int = Field(default=0, description="The worker that forks the children.")
    tasks: list[Task]
    timeout_s: float
    memory_bytes: int
    file_size_bytes: int
    open_files: int


class TaskOutcome(BaseModel):
    """How a task ended, as seen by the zygote (never by the child itself)."""

    model_config = ConfigDict(extra="forbid")

    status: OutcomeStatus
    exit_code: int | None = None
    signal: int | None = None
    wall_s: float = 0.0
    integrity: list[str] = Field(default_factory=list, description=(
        "What the audit hook refused while this task (or the import) ran, as it told the"
        " zygote before any record was written."))
    detail: str = Field(default="", description="Why a protocol failure was declared.")
    policy_calls: list[str] = Field(default_factory=list, description=(
        "Calls into the forbidden package, relayed by the audit hook as they happened."))
    outside_peaks_kib: list[int | None] = Field(default_factory=list, description=(
        "The child's peak resident memory in each measured call of the task, in KiB above its"
        " start, as the zygote read it from /proc (outside_meter.py); None: not measurable."))


class JobOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_id: str
    api_status: OutcomeStatus
    api_exit_code: int | None = None
    api_signal: int | None = None
    api_integrity: list[str] = Field(default_factory=list)
    api_detail: str = ""
    tasks: list[TaskOutcome]
    children: int = Field(description="Processes forked for this job (1 unless a task failed).")
    leftover_processes: int = 0
    protections: list[str] = Field(default_factory=list, description=(
        "Layers in force: applied by the zygote, or reported by the child before the"
        " submission was imported; never what the child said afterwards."))
    static: StaticScan = Field(default_factory=StaticScan)
    phases: dict[str, float] = Field(default_factory=dict, description=(
        "Where the job's time went, as the zygote measured it (zygote.PHASES; bench/): "
        "seconds per phase and the children's CPU seconds and page faults. Never graded."))
