"""Step 3: the scored rows in the student's words, once, at the end: the only place the
engine calls the catalog (grader/feedback.py), so a wording change never touches scoring."""

from __future__ import annotations

from typing import Any

from grader import feedback
from grader.checks.findings import Finding, Phrase
from grader.engine.scoring import Scored
from grader.labs.base import Lab
from grader.models import CheckResult


def worded(rows: list[Scored], lab: Lab, lang: str) -> list[CheckResult]:
    return [worded_row(row, lab, lang) for row in rows]


def worded_row(row: Scored, lab: Lab, lang: str) -> CheckResult:
    """One row as the report shows it: its name, and for a failure what was expected, what
    happened and a hint, with the cases it names described in words."""
    name = title(row, lang)
    common: dict[str, Any] = dict(id=row.id, name=name, function=row.function, kind=row.kind,
                                  device=row.device, hidden=row.hidden, flagged=row.flagged)
    if row.skipped:
        message = feedback.word(row.finding, lang).message
        return CheckResult(**common, status="skipped", passed=None, score=0.0,
                           max_score=row.max_score, message=message)
    if row.finding.passed:
        return CheckResult(**common, status="passed", passed=True, score=row.score,
                           max_score=row.max_score, debug=row.finding.debug)
    wording = feedback.word(named_cases(row.finding, lab, row.function, lang), lang,
                            lab=lab.name)
    message, hint = wording.message, wording.hint
    if row.blame is not None:  # the callee at fault: its message and hint, this row's values
        blamed = feedback.word(row.blame, lang)
        message, hint = blamed.message, blamed.hint
    if row.check == "runtime":
        message = message.replace("{function}", row.function)
    debug = "\n".join(part for part in (row.finding.debug, row.log) if part)
    return CheckResult(**common, status="failed", passed=False, score=row.score,
                       max_score=row.max_score, message=message, expected=wording.expected,
                       got=wording.got, hint=hint, debug=debug)


def title(row: Scored, lang: str) -> str:
    """A row's name: its check's, a runtime row's for its function, and for a hidden row the
    check's name with the hidden case it graded."""
    if row.check == "runtime":
        name = feedback.check_name("runtime", lang, function=row.function)
        return feedback.ui("hidden_runtime", lang, check=name) if row.hidden else name
    name = feedback.check_name(row.check, lang)
    return feedback.ui("hidden_case", lang, check=name, case=row.case) if row.case else name


def named_cases(finding: Finding, lab: Lab, function: str, lang: str) -> Finding:
    """The finding with each case id it names (`case=`, in its phrases too) replaced by the
    case in words (Lab.describe_case): "3 float32 parameters, one with no gradient", not
    `mixed`. An id that is not one of the lab's cases (a hidden case's own name) stays."""
    cases = {case["id"]: case for case in lab.cases(function)}

    def words(params: dict[str, Any]) -> dict[str, Any]:
        named = {}
        for key, value in params.items():
            if isinstance(value, Phrase):
                value = Phrase(value.key, words(value.params))
            elif key == "case" and isinstance(value, str) and value in cases:
                described = [feedback.fill_phrase(p, lang)
                             for p in lab.describe_case(cases[value])]
                value = ", ".join(described) or value
            named[key] = value
        return named

    return Finding(finding.passed, finding.key, words(finding.params), finding.debug)
