"""What every lab provides to the engine: its names, cases, checks and default rubric."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from grader.checks.findings import Finding
from grader.models import CheckKind, Rubric

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


@dataclass(frozen=True)
class Evidence:
    """Everything a judge may look at for one function (and one device for per-device checks)."""

    api: dict[str, Any]
    static_policy: list[str]
    policy_calls: list[str]
    cases: dict[str, Any] = field(default_factory=dict)


def signature_judge(function: str, *, kind: str, parameters: list[tuple[str, str | None]],
                    methods: tuple[str, ...] = ()) -> Callable[[Evidence], Finding]:
    """The `api` judge of one lab name: defined, of the right kind, with the lab's signature."""
    from grader.checks.api import judge_signature

    def judge(evidence: Evidence) -> Finding:
        return judge_signature(evidence.api.get(function), name=function, kind=kind,
                               parameters=parameters, methods=methods)

    return judge


@dataclass(frozen=True)
class CheckSpec:
    id: str
    kind: CheckKind
    judge: Callable[[Evidence], Finding]
    per_device: bool = True
    policy: str | None = None

    @property
    def function(self) -> str:
        return self.id.split(".", 1)[0]


@cache
def _load_rubric(path: Path) -> Rubric:
    """Read and validate once per process: batch grading asks for it per submission."""
    with path.open("rb") as handle:
        return Rubric.model_validate(tomllib.load(handle))


@dataclass(frozen=True)
class Lab:
    name: str
    filename: str
    functions: tuple[str, ...]
    checks: tuple[CheckSpec, ...]
    cases: Callable[[str], list[dict[str, Any]]]
    forbidden_package: str
    rubric_path: Path

    def rubric(self) -> Rubric:
        return _load_rubric(self.rubric_path)

    def checks_for(self, function: str) -> list[CheckSpec]:
        return [c for c in self.checks if c.function == function]
