from __future__ import annotations

import re
import string

from grader import feedback
from tests.conftest import ROOT


def _flat(table: dict, prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _placeholders(text: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(text) if field}


def test_every_language_has_the_same_keys_and_placeholders() -> None:
    english = _flat(feedback.catalog("en"))
    for lang in feedback.LANGUAGES:
        other = _flat(feedback.catalog(lang))
        assert other.keys() == english.keys(), lang
        for key, text in english.items():
            assert _placeholders(other[key]) == _placeholders(text), (lang, key)


def test_every_message_key_used_by_the_grader_is_in_the_catalog() -> None:
    used: set[str] = set()
    for path in (ROOT / "grader").rglob("*.py"):
        used |= set(re.findall(r'fail\(\s*"(\w+)"', path.read_text()))
        used |= set(re.findall(r'Finding\(False, "(\w+)"', path.read_text()))
    messages = feedback.catalog("en")["messages"]
    assert used, "no message keys found"
    assert sorted(used - set(messages)) == []


def test_every_check_has_a_name_in_every_language() -> None:
    from grader.labs import LAB_FILES, get_lab

    for lab in LAB_FILES:
        for check in get_lab(lab).checks:
            for lang in feedback.LANGUAGES:
                names = feedback.catalog(lang)["names"]
                pattern = "*." + check.id.partition(".")[2]
                assert check.id in names or pattern in names, (lang, check.id)


def test_default_language_follows_the_locale(monkeypatch) -> None:
    for variable in ("LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LANG", "ko_KR.UTF-8")
    assert feedback.default_language() == "ko"
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    assert feedback.default_language() == "en"
