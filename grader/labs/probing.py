"""Child-side helpers every lab's probes share."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

Case = dict[str, Any]


def missing_name(function: str) -> dict[str, Any]:
    """The observation for a case whose lab function the submission does not define."""
    return {"error": {"type": "AttributeError", "bases": ["AttributeError", "Exception"],
                      "message": f"no {function}", "location": "", "traceback": ""}}


def run_cases(module: ModuleType, function: str, cases: list[Case],
              run_case: Callable[[Any, Case], dict[str, Any]]) -> dict[str, Any]:
    """Each case's observation, keyed by case id."""
    target = getattr(module, function, None)
    return {case["id"]: missing_name(function) if target is None else run_case(target, case)
            for case in cases}
