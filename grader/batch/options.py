"""What a class run is asked for and what it returns, shared by the run and its executors."""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from grader.engine import CheckOptions
from grader.layouts import Found
from grader.models import Report
from grader.summary import ClassSummary


@dataclass(frozen=True)
class BatchOptions:
    lab: str
    out: Path
    workers: int = 1  # submissions graded at once: threads here, or workers of local:N
    force: bool = False
    check: CheckOptions = field(default_factory=CheckOptions)
    release: bool = False  # hidden results shown in the students' feedback files


@dataclass
class BatchResult:
    students: int = 0
    graded: int = 0
    reused: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)
    elapsed_s: float = 0.0
    summary: ClassSummary | None = None
    # Seconds per phase summed over the submissions graded in this run (Report.phases, and
    # "write": their report and feedback files), and the workers' peak zygote RSS (bench/).
    phases: dict[str, float] = field(default_factory=dict)
    zygote_peak_mib: float = 0.0
    cluster_workers: int = 0  # the Dask workers in use (batch/cluster.py); 0: graded here


Progress = Callable[[str, Report, bool], None]  # (student, report, reused)
Graded = Generator[tuple[Report, bool], None, None]  # (report, reused) per student


class Executor(Protocol):
    """Where a class's submissions are graded: this machine's workers (batch/local.py) or a
    Dask cluster (batch/cluster.py). An executor only grades: the run (batch/__init__.py)
    reads nothing it sends and writes every file itself, in the order reports come back."""

    def graded(self, students: list[Found], options: BatchOptions, result: BatchResult
               ) -> Graded:
        """(report, reused) per student as they finish; closing it stops what is left."""
        ...
