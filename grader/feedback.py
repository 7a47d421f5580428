"""The only place that words messages for students, from the catalogs in grader/locales/.

Checks return findings as data (a key and values); this module turns them into text in the
student's language, so a translation is one TOML file.
"""

from __future__ import annotations

import locale
import os
import re
import string
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from grader.checks.findings import CheckName, Finding, Phrase

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

LOCALES = Path(__file__).with_name("locales")
LANGUAGES = ("en", "ko")


@dataclass(frozen=True)
class Wording:
    message: str
    expected: str
    got: str
    hint: str


class _Lenient(dict):  # type: ignore[type-arg]
    """An unknown {placeholder} becomes empty instead of failing a whole report."""

    def __missing__(self, key: str) -> str:
        return ""


def default_language() -> str:
    """'ko' when the locale says Korean, else 'en'."""
    for variable in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(variable, "")
        if value:
            return "ko" if value.lower().startswith("ko") else "en"
    code = locale.getlocale()[0] or ""
    return "ko" if code.lower().startswith("ko") else "en"


@cache
def catalog(lang: str) -> dict[str, Any]:
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; available: {', '.join(LANGUAGES)}")
    with (LOCALES / f"{lang}.toml").open("rb") as handle:
        return tomllib.load(handle)


def fill(template: str, params: dict[str, Any], lang: str = "en") -> str:
    words = {key: _word(value, lang) for key, value in params.items()}
    try:
        text = string.Formatter().vformat(template, (), _Lenient(words))
        text = re.sub(r"\s+\(\s*\)", "", text)  # an empty fragment's parentheses (` ()`)
        text = re.sub(r"(?<=\S)  +(?=\S)", " ", text)  # an empty fragment's gap
        return re.sub(r"(?<=\S) +(?=[,;:.](\s|$))", "", text).strip()
    except (ValueError, TypeError, IndexError, KeyError):
        return template  # a value of the wrong type for its format spec


def fill_phrase(value: Phrase, lang: str) -> str:
    """A phrase in `lang`, its own phrases filled in."""
    return _phrase(value, lang)


def _word(value: Any, lang: str) -> Any:
    """A value of a finding as the reader reads it: phrases and check names in `lang`."""
    if isinstance(value, Phrase):
        return _phrase(value, lang)
    if isinstance(value, CheckName):
        return check_name(value.check_id, lang)
    return value


def _phrase(value: Phrase, lang: str) -> str:
    return fill(catalog(lang)["phrases"].get(value.key, value.key), value.params, lang)


def ui(key: str, lang: str, **params: Any) -> str:
    return fill(catalog(lang)["ui"][key], params, lang)


def check_name(check_id: str, lang: str, **params: Any) -> str:
    """The check's own name, else its kind's pattern (`*.returns_input`) for its function."""
    if not params:  # almost every call: the same few hundred names for a whole class
        return _plain_check_name(check_id, lang)
    return _check_name(check_id, lang, params)


@cache
def _plain_check_name(check_id: str, lang: str) -> str:
    return _check_name(check_id, lang, {})


def _check_name(check_id: str, lang: str, params: dict[str, Any]) -> str:
    names = catalog(lang)["names"]
    function, _, suffix = check_id.partition(".")
    template = names.get(check_id) or names.get(f"*.{suffix}", check_id)
    return fill(template, {"function": function, **params}, lang)


def word(finding: Finding, lang: str, *, lab: str = "") -> Wording:
    """Message, expected, got and hint for a failed finding, in the words of `lab`.

    Shared messages are written with the finding's own names (`{tensor}`); a lab may word
    any part of one its own way (`[labs.optim.storage_replaced]`: the optimizer lab's hints
    speak of `p.grad` and `lr`, which no other lab has), a function its own hint
    (`[hints] "softmax_.values_mismatch"`), and an exception type its own
    (`[hints] "import_error.SystemExit"`: what fixes a file that exits as it imports)."""
    words = catalog(lang)
    entry = words["messages"].get(finding.key)
    if entry is None:
        return Wording(finding.key, "", "", "")
    entry = {**entry, **words.get("labs", {}).get(lab, {}).get(finding.key, {})}
    hints = words.get("hints", {})
    hint = hints.get(f"{finding.params.get('function')}.{finding.key}") or hints.get(
        f"{finding.key}.{finding.params.get('error_type')}", entry["hint"])
    return Wording(*(fill(text, finding.params, lang)
                     for text in (entry["summary"], entry["expected"], entry["got"], hint)))


def reproducer_words(entry: str, lang: str, /, **params: Any) -> str:
    """A phrase of the reproducers' catalog (`[reproducers]`): a heading, or the message of
    the assert a reproducer ends in (engine/wording.py)."""
    return fill(catalog(lang)["reproducers"][entry], params, lang)
