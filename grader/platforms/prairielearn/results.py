"""PrairieLearn: the `results.json` an external grader writes, from a report.

PrairieLearn's documented fields (docs.prairielearn.com, "External grading", "Grading
results"): `gradable`, `score` in [0, 1], `message`, `output`, `format_errors` (read when not
gradable) and `tests[]`, each with `name`, `description`, `points`, `max_points`, `message` and
`output`. Its `<pl-external-grader-results>` element heads the results with the tests' points
summed ("Score: 90/96 (93.75%)") and shows each text field as preformatted text (HTML escaped,
ANSI colours rendered).

See NOTE: [gradable] and NOTE: [hidden checks] below for the two choices this file makes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from grader import feedback
from grader.exporters.text import feedback_text
from grader.models import CheckResult, ImportFailure, Report
from grader.views import STUDENT, Shown, View

# NOTE: [gradable]
# PrairieLearn's `gradable: false` marks a submission "invalid, not gradable": no points given
# or taken, no attempt used. It is written exactly where the gradebook of `grade` says `not
# gradable`: none of the student's code ran, because nothing gradable was uploaded (missing,
# empty, unreadable, ambiguous, without the lab's names) or because the grader itself failed
# (misconfigured, internal error, could not start). The reason is the `message` and the one
# `format_errors` entry. Once the code ran, every outcome is gradable and scored: a file that
# does not import (a syntax error included) scores 0, a function that hangs or crashes loses its
# own points, as on every other platform (the gradebook's `did not import`).

# NOTE: [hidden checks]
# PrairieLearn records `score` as the grade and shows it at once, with no later release. So the
# score counts every check, hidden ones included; until the hidden-cases file says `release =
# true`, the hidden checks are folded into one test that shows their points summed and names
# none of them, so the tests still add up to the score. Released, each is a test of its own.

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # ANSI escapes and the like; keeps \t, \n


def plain(text: str) -> str:
    """`text` without control characters: what came from a submission (an exception's text)
    cannot colour or rewrite the page through PrairieLearn's ANSI rendering."""
    return _CONTROL.sub("", text)


def fraction(score: float, max_score: float) -> float:
    """The score PrairieLearn records: a fraction in [0, 1], 0 for a lab worth nothing."""
    if max_score <= 0:
        return 0.0
    return round(min(max(score / max_score, 0.0), 1.0), 6)


def _details(check: CheckResult | ImportFailure, lang: str) -> str:
    """What was expected, what happened, and the hint: a labelled line each."""
    return "\n".join(f"{feedback.ui(key, lang)}: {plain(value)}" for key, value in
                     (("expected", check.expected), ("got", check.got), ("hint", check.hint))
                     if value)


def _test(check: CheckResult, lang: str) -> dict[str, Any]:
    failed = check.status == "failed"
    return {"name": f"{check.name} [{check.device}]", "description": check.id,
            "points": check.score, "max_points": check.max_score,
            "message": plain(check.message) if failed else "",
            "output": _details(check, lang) if failed else ""}


def _withheld_test(report: Report, seen: Shown, lang: str) -> dict[str, Any]:
    """The hidden checks not yet released, as one test (NOTE: [hidden checks])."""
    return {"name": feedback.ui("hidden_tag", lang),
            "points": round(report.score - seen.report.score, 6),
            "max_points": seen.withheld_points,
            "message": feedback.ui("hidden_withheld", lang, count=seen.withheld_checks,
                                   points=seen.withheld_points),
            "output": ""}


def _message(report: Report, seen: Shown, lang: str) -> str:
    """The top text: the points shown, the verdict, what is withheld, and why the file did not
    import."""
    shown = seen.report
    lines = [feedback.ui("visible_title" if seen.withholds else "title", lang, lab=shown.lab,
                         score=shown.score, max_score=shown.max_score)]
    graded = [c for c in shown.checks if c.status != "skipped"]
    failed = sum(c.status == "failed" for c in graded)
    lines.append(feedback.ui("some_failed", lang, failed=failed, total=len(graded)) if failed
                 else feedback.ui("all_passed", lang))
    if seen.withheld_checks:
        lines.append(feedback.ui("hidden_withheld", lang, count=seen.withheld_checks,
                                 points=seen.withheld_points))
    if report.integrity:  # the findings themselves are for the instructor
        lines.append(feedback.ui("flagged", lang))
    if report.import_error is not None:
        lines += ["", plain(report.import_error.message), _details(report.import_error, lang)]
    return "\n".join(lines).rstrip()


def not_gradable(message: str) -> dict[str, Any]:
    """results.json for a submission none of whose code ran (NOTE: [gradable])."""
    return {"gradable": False, "score": 0.0, "message": message, "format_errors": [message],
            "tests": []}


def results_json(report: Report, *, lang: str = "en", view: View = STUDENT) -> dict[str, Any]:
    """The results.json object for one submission."""
    if report.error:
        return not_gradable(plain(feedback.ui("not_graded", lang, error=report.error)))
    seen = view.of(report)
    tests = [_test(c, lang) for c in seen.report.checks if c.status != "skipped"]
    if seen.withholds:
        tests.append(_withheld_test(report, seen, lang))
    return {
        "gradable": True,
        "score": fraction(report.score, report.max_score),
        "message": _message(report, seen, lang),
        "output": plain(feedback_text(report, lang=lang, view=view)),
        "tests": tests,
    }


def render(reports: Sequence[Report], *, view: View, lang: str) -> str:
    """results.json for one report (a grading job writes exactly one)."""
    (report,) = reports
    return json.dumps(results_json(report, lang=lang, view=view), indent=2) + "\n"
