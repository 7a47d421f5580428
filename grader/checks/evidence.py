"""What a judge reads: one function's observations and the cases they cover.

It lives with the checks, below the labs, so that the checks' helpers and every lab's judges
share one type without the checks importing a lab.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Case = dict[str, Any]


@dataclass(frozen=True)
class Evidence:
    """Everything a judge may look at for one function (and one device for per-device checks).

    `plan` is the cases this judgement covers and `cases` their observations by case id. Judges
    read the plan, never their lab's case table: the same judge then grades an instructor's
    hidden case, given a plan holding only that case.
    """

    api: dict[str, Any]
    static_policy: list[str]
    policy_calls: list[str]
    cases: dict[str, Any] = field(default_factory=dict)
    plan: tuple[Case, ...] = ()

    def planned(self, predicate: Callable[[Case], bool] = lambda case: True) -> list[Case]:
        return [case for case in self.plan if predicate(case)]

    def planned_ids(self, predicate: Callable[[Case], bool] = lambda case: True) -> list[str]:
        return [case["id"] for case in self.plan if predicate(case)]
