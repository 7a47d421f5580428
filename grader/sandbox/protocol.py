"""Messages between the grading process and the zygote: one JSON line each way per job.

A job is one submission: the child imports it once, describes its API, then runs one task per
(lab function, device), reporting progress on a private pipe so the zygote can give each task
its own time limit and, when a task hangs or kills the process, start a fresh child for the
tasks after it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

OutcomeStatus = Literal["ok", "timeout", "signaled", "exited", "no_result", "not_run"]


class Task(BaseModel):
    """Probe one lab function on one device."""

    model_config = ConfigDict(extra="forbid")

    function: str
    device: str = "cpu"
    cases: list[dict[str, Any]] = Field(default_factory=list)
    result_path: str


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
    scratch_path: str = Field(default="", description="The child's working folder.")
    run_as: int | None = Field(default=None, description="Unprivileged uid for the child.")
    grader_pid: int = Field(default=0, description="The grading process: no signals to it.")
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


class JobOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_id: str
    api_status: OutcomeStatus
    api_exit_code: int | None = None
    api_signal: int | None = None
    tasks: list[TaskOutcome]
    children: int = Field(description="Processes forked for this job (1 unless a task failed).")
    leftover_processes: int = 0
