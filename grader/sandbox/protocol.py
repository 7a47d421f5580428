"""Messages between the grading process and the zygote: one JSON line each way per unit."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

IMPORT_UNIT = "__import__"

OutcomeStatus = Literal["ok", "timeout", "signaled", "exited", "no_result"]


class Unit(BaseModel):
    """One piece of untrusted work: probe one lab function on one device."""

    model_config = ConfigDict(extra="forbid")

    unit_id: str
    lab: str
    function: str = Field(description=f"A lab function, or {IMPORT_UNIT!r} to inspect the API.")
    device: str = "cpu"
    submission_path: str
    result_path: str
    log_path: str
    nonce: str
    cases: list[dict[str, Any]] = Field(default_factory=list)
    timeout_s: float
    memory_bytes: int
    file_size_bytes: int
    open_files: int


class UnitOutcome(BaseModel):
    """How the child ended, as seen by the zygote (never by the child itself)."""

    model_config = ConfigDict(extra="forbid")

    unit_id: str
    status: OutcomeStatus
    exit_code: int | None = None
    signal: int | None = None
    wall_s: float = 0.0
    leftover_processes: int = 0
