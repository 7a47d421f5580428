"""Hidden cases: an instructor's file of extra cases and withheld checks.

The file is TOML, kept with the instructor (never in the student package):

    lab = "optim"
    hide = ["Adam.trajectory.small_grads"]   # checks graded but withheld (glob patterns)
    release = false                          # true (or `--release`): students see them too

    [[case]]
    function = "SGD"
    like = "trajectory.momentum"            # a case of the lab to start from
    name = "momentum_big"                   # hidden checks are `<check id>@momentum_big`
    weight = 1.0                            # points: the check's rubric points times this
    set = { seed = 4242, dtype = "float64", shapes = [[33, 7], [5]] }

A hidden case is the `like` case with `set` applied. It runs in the same child as the lab's own
cases and is judged by the same judges, given a plan that holds only that case: every check that
can fail on it grades it, as its own hidden check. Loading a file
validates it fully (names, keys, types, and building the inputs and reference), so a mistake in
it is one clear error before grading starts, never a wrong score for every student.
"""

from __future__ import annotations

import difflib
import fnmatch
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from grader.checks.findings import Finding, Phrase
from grader.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

Case = dict[str, Any]

# What makes a case the kind of case it is: a hidden case keeps its `like` case's.
STRUCTURAL_KEYS = frozenset({"id", "probe", "class", "function", "group", "measure", "kind"})
HIDDEN_PREFIX = "hidden."


class HiddenFileError(UsageError):
    """A hidden-cases file that cannot be used: one line, naming the file and the entry."""


class HiddenCase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    function: str
    like: str = Field(description="Id of the lab case this one starts from.")
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,40}$")
    weight: float = Field(default=1.0, ge=0)
    set: dict[str, Any] = Field(default_factory=dict)


class HiddenFile(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    lab: str
    hide: list[str] = Field(default_factory=list)
    release: bool = False
    cases: list[HiddenCase] = Field(default_factory=list, alias="case")
    _source: str = PrivateAttr(default="hidden file")

    @property
    def source(self) -> str:
        """Where the file came from, for messages."""
        return self._source


def load_hidden_file(path: Path) -> HiddenFile:
    """Read and validate the file's shape (light: no lab, no torch)."""
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise HiddenFileError(f"{path}: cannot read the hidden-cases file "
                              f"({exc.strerror})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise HiddenFileError(f"{path}: not valid TOML ({exc})") from exc
    return _validated(data, source=str(path))


def parse_hidden_text(text: str, *, source: str) -> HiddenFile:
    """`load_hidden_file` for TOML text held elsewhere (an nbgrader test cell); `source` says
    where, for messages."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HiddenFileError(f"{source}: not valid TOML ({exc})") from exc
    return _validated(data, source=source)


def _validated(data: dict[str, Any], *, source: str) -> HiddenFile:
    try:
        hidden = HiddenFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise HiddenFileError(f"{source}: {where}: {first['msg']} "
                              "(keys: lab, hide, release, [[case]])") from exc
    hidden._source = source
    return hidden


@dataclass(frozen=True)
class HiddenVariant:
    """One hidden case, ready to run and to judge."""

    name: str
    function: str
    weight: float
    run_case: Case  # sent to the child, under its own id
    judged_case: Case  # the same case under its `like` id, which the judges look for
    check_ids: tuple[str, ...]  # the lab's checks that judge it

    def check_id(self, base: str) -> str:
        return f"{base}@{self.name}"


@dataclass(frozen=True)
class HiddenPlan:
    """A hidden-cases file resolved against its lab."""

    variants: tuple[HiddenVariant, ...] = ()
    withheld: frozenset[str] = frozenset()

    def for_function(self, function: str) -> list[HiddenVariant]:
        return [v for v in self.variants if v.function == function]


# What a check sees when the function raised on the case: a check that cannot fail on it does
# not judge the case (zero_grad's history check on a case without a grad_fn gradient).
_RAISED = {"type": "NotImplementedError", "bases": ["NotImplementedError", "RuntimeError",
                                                    "Exception"],
           "message": "", "location": "", "traceback": ""}


def judging_checks(lab: Any, function: str, case: Case) -> tuple[str, ...]:
    """The ids of the function's checks that fail when the function raises on `case` alone:
    the checks that judge it."""
    from grader.checks.evidence import Evidence

    def fails(check: Any, plan: tuple[Case, ...]) -> bool:
        evidence = Evidence(api={}, static_policy=[], policy_calls=[], plan=plan,
                            cases={case["id"]: {"error": _RAISED, "raised": _RAISED}})
        try:
            return not check.judge(evidence).passed
        except Exception:  # a judge that trips over the stand-in observation reads the case
            return True

    # A check that fails without the case too (a signature check here) does not depend on it.
    return tuple(check.id for check in lab.checks_for(function)
                 if fails(check, (case,)) and not fails(check, ()))


def _same_json_type(new: Any, old: Any) -> bool:
    if isinstance(old, bool) or isinstance(new, bool):
        return isinstance(new, bool) and isinstance(old, bool)
    if isinstance(old, (int, float)):
        return isinstance(new, (int, float))
    if old is None:
        return True
    return type(new) is type(old)


def _settable_keys(cases: list[Case], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Each key a hidden case may set, with an example value of its type."""
    keys: dict[str, Any] = dict(extra)
    for case in cases:
        for key, value in case.items():
            if key not in STRUCTURAL_KEYS and keys.get(key) is None:
                keys[key] = value
    return keys


def _resolve_case(lab: Any, entry: HiddenCase, where: str) -> HiddenVariant:
    if entry.function not in lab.functions:
        raise HiddenFileError(f"{where}: lab {lab.name} has no function {entry.function!r} "
                              f"(it has {', '.join(lab.functions)})")
    cases = lab.cases(entry.function)
    base = next((c for c in cases if c["id"] == entry.like), None)
    if base is None:
        ids = ", ".join(c["id"] for c in cases[:12]) + (", ..." if len(cases) > 12 else "")
        raise HiddenFileError(f"{where}: {entry.function} has no case {entry.like!r} "
                              f"(its cases: {ids}; `inplace-grader checks --lab {lab.name} "
                              "--cases` lists them all)")
    settable = _settable_keys(cases, lab.extra_case_keys)
    for key, value in entry.set.items():
        if key in STRUCTURAL_KEYS:
            raise HiddenFileError(f"{where}: set.{key} cannot be changed; start from another "
                                  "`like` case instead")
        if key not in settable:
            raise HiddenFileError(f"{where}: set.{key}: unknown key; a {entry.function} case "
                                  f"has {', '.join(sorted(settable))}")
        if not _same_json_type(value, settable[key]):
            raise HiddenFileError(f"{where}: set.{key}: expected a value like "
                                  f"{settable[key]!r}, got {value!r}")
    judged = {**base, **entry.set}
    from grader.checks.dtypes import DTYPES  # torch: the lab is loaded by now

    if "dtype" in entry.set and entry.set["dtype"] not in DTYPES:
        raise HiddenFileError(f"{where}: set.dtype: unknown dtype {entry.set['dtype']!r}; "
                              f"choose {', '.join(DTYPES)}")
    try:
        lab.validate_case(judged)
    except Exception as exc:  # any failure to build it is the file's mistake
        raise HiddenFileError(f"{where}: the case cannot be graded: "
                              f"{type(exc).__name__}: {exc}") from exc
    check_ids = judging_checks(lab, entry.function, judged)
    if not check_ids:
        raise HiddenFileError(f"{where}: no check of {entry.function} judges this case")
    return HiddenVariant(name=entry.name, function=entry.function, weight=entry.weight,
                         run_case={**judged, "id": HIDDEN_PREFIX + entry.name},
                         judged_case=judged, check_ids=check_ids)


def check_against(hidden: HiddenFile, *, lab: str, check_ids: list[str]) -> frozenset[str]:
    """What can be checked of the file knowing only the lab's name and check ids (no torch):
    the lab it was written for and its `hide` patterns. Returns the withheld check ids."""
    source = hidden.source
    if hidden.lab != lab:
        raise HiddenFileError(f"{source}: written for lab {hidden.lab!r}, grading {lab!r}")
    withheld: set[str] = set()
    for pattern in hidden.hide:
        matched = fnmatch.filter(check_ids, pattern)
        if not matched:
            close = difflib.get_close_matches(pattern, check_ids, n=3, cutoff=0.6)
            maybe = f"did you mean {' or '.join(close)}? " if close else ""
            raise HiddenFileError(f"{source}: hide: {pattern!r} matches no check of lab "
                                  f"{lab}; {maybe}`inplace-grader checks --lab {lab}` lists "
                                  "them")
        withheld.update(matched)
    return frozenset(withheld)


def resolve(lab: Any, hidden: HiddenFile) -> HiddenPlan:
    """Check the file against `lab` and prepare its cases; raises HiddenFileError."""
    source = hidden.source
    withheld = check_against(hidden, lab=lab.name, check_ids=[c.id for c in lab.checks])
    names = [c.name for c in hidden.cases]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise HiddenFileError(f"{source}: two cases are named {duplicate!r}")
    variants = tuple(_resolve_case(lab, entry, f"{source}: case {entry.name!r}")
                     for entry in hidden.cases)
    return HiddenPlan(variants=variants, withheld=withheld)


CASE_PARAM = "case"  # the finding parameter that names a case (`fail(..., case=id)`)


def rename_case(finding: Finding, judged_id: str, name: str) -> Finding:
    """Word a hidden check's finding with the hidden case's name, not its `like` id. Only the
    `case` parameters change: a case id can equal another value of the message (optim's
    case "float32" is also its dtype)."""
    def swap(params: Mapping[str, Any]) -> dict[str, Any]:
        return {key: name if key == CASE_PARAM and value == judged_id
                else Phrase(value.key, swap(value.params)) if isinstance(value, Phrase)
                else value
                for key, value in params.items()}

    return Finding(finding.passed, finding.key, swap(finding.params), finding.debug)


def variant_observations(observations: Mapping[str, Any], variant: HiddenVariant
                         ) -> dict[str, Any]:
    """The hidden case's observation under the id its judges look for."""
    observed = observations.get(variant.run_case["id"])
    return {} if observed is None else {variant.judged_case["id"]: observed}


def iter_variant_checks(plan: HiddenPlan | None, function: str
                        ) -> Iterator[tuple[HiddenVariant, str]]:
    for variant in plan.for_function(function) if plan else []:
        for check_id in variant.check_ids:
            yield variant, check_id


def released(hidden: HiddenFile | None, *, release_flag: bool = False) -> bool:
    """Whether students see hidden results: the instructor said so on the command line or in
    the file (`release = true`)."""
    return release_flag or bool(hidden and hidden.release)


def grading_key(hidden: HiddenFile) -> str:
    """What of the file changes grading: everything but `release`, which changes only what
    students are shown (so releasing never regrades)."""
    return hidden.model_dump_json(exclude={"release"})
