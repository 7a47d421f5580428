"""The rubric in force and the hidden plan: what each check is worth, and which are hidden.

Everything here but `hidden_plan`'s resolution needs only a lab's rubric.toml (no torch), so an
instructor's typo is told before anything starts.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from typing import TYPE_CHECKING, NamedTuple

from grader.errors import UsageError
from grader.hidden import (
    HiddenFile,
    HiddenFileError,
    HiddenPlan,
    grading_key,
    iter_variant_checks,
    resolve,
)
from grader.labs import lab_rubric
from grader.labs.base import CheckSpec, Lab
from grader.models import Rubric, RubricOverride

if TYPE_CHECKING:
    from grader.engine.context import CheckOptions


def effective_rubric(lab: Lab, override: RubricOverride | None) -> Rubric:
    rubric = lab.rubric()
    known = {c.id for c in lab.checks}
    if set(rubric.points) != known:
        missing = sorted(known - set(rubric.points))
        raise RuntimeError(f"rubric of lab {lab.name} does not match its checks: {missing}")
    return overridden(rubric, override)


def overridden(rubric: Rubric, override: RubricOverride | None) -> Rubric:
    """The lab's rubric with an instructor's override applied; UsageError for a key the lab
    does not have, naming the closest ones."""
    if override is None:
        return rubric
    unknown = sorted(set(override.weights) - set(rubric.points))
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(rubric.points), n=3, cutoff=0.6)
        maybe = f"did you mean {' or '.join(close)}? " if close else ""
        raise UsageError(f"rubric override: unknown check id {unknown[0]!r}; {maybe}the lab's "
                         f"{len(rubric.points)} check ids are listed by `inplace-grader checks "
                         f"--lab {rubric.lab}`")
    unknown_policies = sorted(set(override.policies) - set(rubric.policies))
    if unknown_policies:
        raise UsageError(f"rubric override: unknown policy {unknown_policies[0]!r}; "
                         f"available: {', '.join(sorted(rubric.policies))}")
    return rubric.model_copy(update={
        "points": {**rubric.points, **override.weights},
        "policies": {**rubric.policies, **override.policies},
    })


def rubric_key(rubric: Rubric) -> str:
    """What identifies the rubric a report was graded with: its points and policies."""
    text = json.dumps({"points": rubric.points, "policies": rubric.policies}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def rubric_in_force(lab: str, override: RubricOverride | None) -> Rubric:
    """The rubric grading `lab` with `override` uses, read without torch."""
    return overridden(lab_rubric(lab), override)


def check_instructor_input(lab: str, options: CheckOptions) -> None:
    """The checks of a rubric override and a hidden-cases file that need no torch: run first,
    so that a typo is one line in well under a second (the cases of a hidden file are checked
    once the lab is loaded, still before any student is graded)."""
    from grader.hidden import check_against

    rubric = rubric_in_force(lab, options.rubric_override)
    if options.hidden is not None:
        try:
            check_against(options.hidden, lab=lab, check_ids=list(rubric.points))
        except HiddenFileError as exc:
            raise UsageError(str(exc)) from exc


_resolved: dict[tuple[str, str], HiddenPlan] = {}  # a batch asks once per submission


def hidden_plan(lab: Lab, hidden: HiddenFile | None) -> HiddenPlan:
    """The hidden-cases file resolved against `lab`, once per process; a mistake in the file
    is a usage error."""
    if hidden is None:
        return HiddenPlan()
    key = (lab.name, grading_key(hidden))
    if key not in _resolved:
        try:
            _resolved[key] = resolve(lab, hidden)
        except HiddenFileError as exc:
            raise UsageError(str(exc)) from exc
    return _resolved[key]


def enabled(check: CheckSpec, rubric: Rubric) -> bool:
    """Whether the rubric grades `check` (a check under a policy the rubric turned off is not)."""
    return check.policy is None or rubric.policies.get(check.policy, True)


def points(rubric: Rubric, check: CheckSpec) -> float:
    return float(rubric.points[check.id])


class UnitPoints(NamedTuple):
    """A unit's points split by what students see and by which child earns them: `visible`
    and `withheld` checks read the lab's own cases (withheld ones are hidden from students),
    `variants` are the hidden cases' checks, run in a child of their own."""

    visible: float
    withheld: float
    variants: float

    @property
    def hidden(self) -> float:
        return self.withheld + self.variants


ALL_PARTS = frozenset({"visible", "withheld", "variants"})


def unit_points_split(lab: Lab, function: str, rubric: Rubric, plan: HiddenPlan, *,
                      shared: bool) -> UnitPoints:
    """Points of one function on one device: its per-device checks and hidden cases, plus,
    with `shared`, its once-per-submission checks (api, policy)."""
    visible = withheld = variants = 0.0
    for check in lab.checks_for(function):
        if (shared or check.per_device) and enabled(check, rubric):
            if check.id in plan.withheld:
                withheld += points(rubric, check)
            else:
                visible += points(rubric, check)
    for variant, check_id in iter_variant_checks(plan, function):
        check = lab.check(check_id)
        if (shared or check.per_device) and enabled(check, rubric):
            variants += points(rubric, check) * variant.weight
    return UnitPoints(visible, withheld, variants)


def unit_points(lab: Lab, function: str, rubric: Rubric, plan: HiddenPlan, *,
                shared: bool) -> float:
    """All the points of one unit, hidden ones included (what an nbgrader cell is worth)."""
    return sum(unit_points_split(lab, function, rubric, plan, shared=shared))
