"""A finding is a verdict as data: passed or not, a message key, and the values to show."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Finding:
    """The outcome of one check; `key` names the catalog entry that words it for students."""

    passed: bool
    key: str = "ok"
    params: dict[str, Any] = field(default_factory=dict)
    debug: str = ""


@dataclass(frozen=True)
class Phrase:
    """A translatable fragment inside a finding's values ("at step 3"), worded by the catalog."""

    key: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckName:
    """A check named in a finding ("either “keeps storage” or …"), worded as the check's own
    name in the reader's language: scoring names checks without choosing words."""

    check_id: str


def phrase(key: str, **params: Any) -> Phrase:
    return Phrase(key, params)


def returned(type_name: str) -> Phrase:
    """What a function returned, from its type's name, in words: "a new tensor", "None", "a
    list" (never a bare `Tensor` or `NoneType`)."""
    if type_name == "Tensor":
        return phrase("new_tensor")
    if type_name == "NoneType":
        return phrase("none")
    return phrase("a_value_of_type", type=type_name)


PASS = Finding(passed=True)


def fail(message_key: str, debug: str = "", **params: Any) -> Finding:
    return Finding(passed=False, key=message_key, params=params, debug=debug)


def first_failure(findings: list[Finding]) -> Finding:
    """The first failing finding, else a pass: one message per check keeps feedback short."""
    for finding in findings:
        if not finding.passed:
            return finding
    return PASS
