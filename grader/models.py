"""Report and rubric models: the data every front end and exporter shares.

The models know no output format; exporters and renderers turn them into text, JSON, CSV, ...
JSON Schema comes free from pydantic (`Report.model_json_schema()`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from grader.errors import ExitCode

CheckKind = Literal[
    "api",
    "identity",
    "storage",
    "version",
    "numerics",
    "allocation",
    "side_effect",
    "autograd",
    "policy",
    "runtime",
]
Device = Literal["cpu", "cuda"]
Status = Literal["passed", "failed", "skipped"]
Points = Annotated[float, Field(ge=0)]


class CheckResult(BaseModel):
    """One graded property of one lab function on one device."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Stable identifier, `function.check`; rubric keys use it.")
    name: str
    function: str
    kind: CheckKind
    device: Device
    status: Status
    passed: bool | None = Field(description="None when the check was skipped.")
    score: float
    max_score: float
    message: str = ""
    expected: str = ""
    got: str = ""
    hint: str = ""
    debug: str = Field(default="", description="Traceback or stderr tail; shown with --debug.")
    reproducer: str = Field(default="", description=(
        "A failed check's reproducer (docs/semantics.md#reproducers): plain Python to run next "
        "to the student's file that builds the failing case's inputs, calls their function "
        "and ends in the assert that fails; shown by `check --explain ID`. Empty for a passed "
        "or hidden check, or one no faithful reproducer exists for."))
    waits_on: list[str] = Field(default_factory=list, description=(
        "Check ids this failed check waits on (docs/semantics.md#shown_by-prerequisites): its "
        "property holds, but it counts once one of them passes. Shown as waiting, not as a "
        "mistake; its status stays `failed` and its score 0 until then."))
    hidden: bool = Field(default=False, description="Graded, but withheld from student feedback "
                         "until released (an instructor's hidden case or hidden check).")
    flagged: bool = Field(default=False, description=(
        "Failed on what the sandbox saw at run time (tampering, a forged window, meters inside "
        "and outside the process that disagree): the report's `integrity` names it too."))


class ImportFailure(BaseModel):
    """Why the file did not import: one block in every output, where each function's row
    says only that it was not graded."""

    model_config = ConfigDict(extra="forbid")

    file: str = Field(description="The student's own file name.")
    error_type: str = Field(description="The exception's type, or how the import ended "
                            "(timeout, signaled, exited).")
    error: str = Field(default="", description="The exception's message.")
    line: int | None = Field(default=None, description="Line in the file (a notebook: in its "
                             "joined code cells).")
    cell: int | None = Field(default=None, description="A notebook's cell (1 = its first).")
    cell_line: int | None = Field(default=None, description="The line within that cell.")
    code: str = Field(default="", description="The line that failed.")
    missing_module: str = Field(default="", description="A module the grader does not have.")
    message: str = ""
    expected: str = ""
    got: str = ""
    hint: str = ""
    debug: str = Field(default="", description="The traceback, in the student's file names.")


class Printed(BaseModel):
    """What the submission printed (stdout and stderr, the last 4,000 characters): while it
    imported (`function` empty), or while one function's checks ran."""

    model_config = ConfigDict(extra="forbid")

    function: str = ""
    device: Device = "cpu"
    text: str


def add_phases(total: dict[str, float], phases: dict[str, float]) -> None:
    """Add one run's seconds per phase (Report.phases) into `total`."""
    for name, value in phases.items():
        total[name] = total.get(name, 0.0) + value


class Report(BaseModel):
    """The result of grading one submission: the JSON report
    (docs/semantics.md#the-report-and-exit-codes)."""

    model_config = ConfigDict(extra="forbid")

    lab: str
    submission: str = ""
    student: str = Field(default="", description="Set by batch grading.")
    submission_hash: str = Field(default="", description="sha256 of what was graded (resume).")
    error: str = Field(default="", description="Why the submission could not be graded at all.")
    import_error: ImportFailure | None = Field(
        default=None, description="Why the file did not import (its rows say not graded).")
    rubric_key: str = Field(default="", description=(
        "A digest of the rubric in force (points and policies): a re-run into the same folder "
        "with another rubric is refused unless --force, never applied silently."))
    hidden_max_score: float = Field(
        default=0.0, description="Of max_score, the hidden points no check row carries; "
        "withheld from students like them.")
    score: float
    max_score: float
    checks: list[CheckResult]
    protections: list[str] = Field(default_factory=list)
    output: list[Printed] = Field(default_factory=list, description=(
        "What the submission printed, at import and per function (shown by --debug); never "
        "what it printed on hidden cases."))
    integrity: list[str] = Field(default_factory=list, description=(
        "Instructor-facing: what the static integrity scan found (introspection, raw memory, "
        "meter detection, ...), one line each. Students see only that the file was flagged."))
    grader_version: str
    torch_version: str
    elapsed_s: float
    probe_s: float = Field(default=0.0, description="Time the submission's probes ran.")
    graded_on: str = Field(default="", description=(
        "The Dask worker that ran it, every device's checks (grade --cluster); empty: here."))
    phases: dict[str, float] = Field(default_factory=dict, description=(
        "Where the grading time went: seconds per phase of the sandbox (zygote.PHASES and "
        "JobResult.phases) and of judging, and the children's page faults. For bench/; "
        "never graded."))

    @property
    def all_passed(self) -> bool:
        return (not self.error and self.import_error is None
                and all(c.status != "failed" for c in self.checks))

    @property
    def return_code(self) -> int:
        """`check`'s exit code for this report (grader.errors.ExitCode)."""
        if self.error:
            # Nothing to grade is the user's input (docs/semantics.md#the-report-and-exit-codes).
            return ExitCode.USAGE
        return ExitCode.OK if self.all_passed else ExitCode.FAILED


class Limits(BaseModel):
    """Resource limits for each unit of untrusted work (one lab function on one device)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_s: float = Field(default=60.0, gt=0)
    memory_bytes: int = Field(default=4 * 1024**3, gt=0)
    file_size_bytes: int = Field(default=64 * 1024**2, gt=0)
    open_files: int = Field(default=256, gt=16)


class Rubric(BaseModel):
    """Points per check of one lab, keyed by check id, and which policies are enforced."""

    model_config = ConfigDict(extra="forbid")

    lab: str
    points: dict[str, Points]
    policies: dict[str, bool] = Field(default_factory=dict)


class RubricOverride(BaseModel):
    """An instructor's file: new weights for some checks, policies switched on or off."""

    model_config = ConfigDict(extra="forbid")

    weights: dict[str, Points] = Field(default_factory=dict)
    policies: dict[str, bool] = Field(default_factory=dict)
