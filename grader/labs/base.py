"""What every lab provides to the engine: its names, cases, checks and default rubric."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache, wraps
from pathlib import Path
from typing import Any, TypeVar

from grader.checks.evidence import Case, Evidence
from grader.checks.findings import Finding, Phrase
from grader.errors import UsageError
from grader.labs.reproducers import Reproducer
from grader.models import CheckKind, Rubric

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


T = TypeVar("T")


def case_key(case: Case) -> str:
    """A case's content as text: what references are cached by."""
    return json.dumps(case, sort_keys=True)


def cached_by_content(compute: Callable[[Case], T]) -> Callable[[Case], T]:
    """Cache a reference per case content, so a hidden case that reuses an id gets its own."""
    from_key = cache(lambda key: compute(json.loads(key)))

    @wraps(compute)
    def cached(case: Case) -> T:
        return from_key(case_key(case))

    return cached


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
    # Checks of the same function of which one at least must pass for this one's pass to
    # count: a property earns its points only where the function was shown to do something
    # (kept storage means nothing for a function that wrote nothing). See
    # engine/scoring.py settle_function.
    shown_by: tuple[str, ...] = ()

    @property
    def function(self) -> str:
        return self.id.split(".", 1)[0]


@cache
def load_rubric(path: Path) -> Rubric:
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
    # Builds a case's inputs and reference, raising if it cannot be graded (hidden cases).
    validate_case: Callable[[Case], None] = lambda case: None
    # Case keys a hidden case may set beyond those the lab's own cases have, with an example.
    extra_case_keys: dict[str, Any] = field(default_factory=dict)
    # The outside witness (sandbox/witness.py): the tensors of a case that its function must
    # update in place, as (dtype, shape); and how their final values, read by the grading
    # process, stand in for the record's. `apply_witness` returns the tensor whose record
    # disagrees with memory (tampering), or None.
    witnessed: Callable[[str, Case], list[tuple[str, tuple[int, ...]]]] = (
        lambda function, case: [])
    apply_witness: Callable[[str, Case, dict[str, Any], list[Any]], str | None] = (
        lambda function, case, observed, memory: None)
    # A case in a student's words, as phrases joined by commas: feedback names the input
    # ("3 float32 parameters, one with no gradient"), never an id like `mixed`.
    describe_case: Callable[[Case], list[Phrase]] = lambda case: []
    # The type of the record a case's probe writes (labs/records.py): checked before any
    # judge reads it, so a judge that raises is the grader's bug, not the student's.
    record_type: Callable[[str, Case], Any] | None = None
    # The reproducer of a failed check (labs/reproducers.py): plain Python that builds the
    # failing case's inputs, calls the student's function and asserts the property that
    # failed; given the check, the case and that case's finding. None: this check, or this
    # lab, has none.
    reproducer: Callable[[CheckSpec, Case, Finding], Reproducer | None] | None = None

    def rubric(self) -> Rubric:
        return load_rubric(self.rubric_path)

    def only(self, functions: tuple[str, ...]) -> Lab:
        """This lab narrowed to `functions` (in the lab's order) and their checks: what grading
        one function needs (a mutant of one function, bench/mutation.py). UsageError for a name
        the lab does not have."""
        unknown = [name for name in functions if name not in self.functions]
        if unknown:
            raise UsageError(f"lab {self.name} has no function {unknown[0]!r} "
                             f"(it has {', '.join(self.functions)})")
        return replace(self, functions=tuple(f for f in self.functions if f in functions),
                       checks=tuple(c for c in self.checks if c.function in functions))

    def checks_for(self, function: str) -> list[CheckSpec]:
        return [c for c in self.checks if c.function == function]

    def check(self, check_id: str) -> CheckSpec:
        return next(c for c in self.checks if c.id == check_id)
