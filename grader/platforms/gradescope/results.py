"""Gradescope: the `results.json` an autograder writes, from a report.

Gradescope's documented fields (gradescope-autograders.readthedocs.io, "specs"): a top-level
`score`, `execution_time`, `output`, `output_format`, `visibility` and `tests[]`, each test with
`name`, `score`, `max_score`, `status`, `output`, `visibility`, `tags` and `number`; a test's
own `visibility` overrides the top-level one, and a test without score information is
informational (shown with its status, worth nothing).

- A check becomes a test, its output markdown (`output_format: "md"`): the message, then what
  was expected and what the code did in code spans, the hint on a line of its own, and a
  failed check's reproducer as a code block. Everything that came from the submission is
  escaped, so a student's text cannot format the page.
- Hidden checks get the visibility the instructor chose (`after_published` by default) until
  released, and so does the top level, each visible test overriding it with `visible`: the
  pattern Gradescope's specification gives for "some tests visible at once, the graded ones
  later". While a test is withheld Gradescope shows no total (except under `hidden`, which
  it meant for tests worth no points: docs/gradescope.md says so to the instructor).
- Checks for an absent device (CUDA on a machine without one) and the sandbox's protections in
  force are informational entries: said, not scored.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

from grader import feedback
from grader.models import CheckResult, ImportFailure, Report
from grader.views import STUDENT, View

Visibility = Literal["visible", "hidden", "after_due_date", "after_published"]
MARKDOWN_SPECIAL = set("\\`*_{}[]<>&#|~!")
_LINKISH = re.compile(r"(\S*(?:://|www\.)\S*)")  # shown as code: never a link
_LIST_MARKER = re.compile(r"^(\d*)([-+.)])")  # `- x`, `+ x`, `1. x` at a paragraph's start


def markdown_text(text: str) -> str:
    """`text` as one markdown paragraph that shows it as written, whichever renderer reads it:
    whitespace (newlines too) collapsed, so no line can start a heading, list or code block;
    every character markdown or HTML gives a meaning backslash-escaped, a leading list marker
    too; and anything that looks like a link shown as code, since renderers autolink bare
    URLs. A student's exception text, file name or printed line cannot format, link or inject."""
    parts = []
    for index, piece in enumerate(_LINKISH.split(" ".join(text.split()))):
        if index % 2:  # a URL-like token (the split keeps them at odd places)
            parts.append(code_span(piece))
        else:
            parts.append("".join(f"\\{ch}" if ch in MARKDOWN_SPECIAL else ch for ch in piece))
    return _LIST_MARKER.sub(r"\1\\\2", "".join(parts))


def code_span(text: str) -> str:
    """`text` as one inline code span: fenced by more backticks than it holds in a row."""
    flat = " ".join(text.split())
    run = max((len(part) for part in re.findall(r"`+", flat)), default=0)
    fence = "`" * (run + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def check_markdown(check: CheckResult | ImportFailure, lang: str) -> str:
    """A failed check (or the file's import failure) as markdown: the message, what was
    expected and what happened in code spans, the hint on its own line."""
    lines = [markdown_text(check.message)]
    for key, value in (("expected", check.expected), ("got", check.got)):
        if value:
            lines.append(f"**{feedback.ui(key, lang)}:** {code_span(value)}")
    if check.hint:
        lines.append(f"**{feedback.ui('hint', lang)}:** {markdown_text(check.hint)}")
    return "\n\n".join(lines)


def reproducer_markdown(check: CheckResult, lang: str) -> str:
    """A failed check's reproducer (docs/semantics.md#reproducers) as a fenced code block
    under a line saying what it is; "" where it has none. The code is the grader's own, never
    the submission's text; the fence is longer than any run of backticks in it."""
    if not check.reproducer:
        return ""
    run = max((len(part) for part in re.findall(r"`+", check.reproducer)), default=0)
    fence = "`" * max(3, run + 1)
    label = markdown_text(feedback.reproducer_words("label", lang))
    return f"**{label}**\n\n{fence}python\n{check.reproducer.rstrip()}\n{fence}"


def _summary(report: Report, lang: str, *, view: View) -> str:
    """The top-level text students read, in markdown: hidden checks and their points left out
    until released (the same view as their feedback file)."""
    seen = view.of(report)
    shown = seen.report
    title = markdown_text(feedback.ui("visible_title" if seen.withholds else "title", lang,
                                      lab=shown.lab, score=shown.score,
                                      max_score=shown.max_score))
    if report.error:
        return f"{markdown_text(feedback.ui('not_graded', lang, error=report.error))}\n\n{title}"
    graded = [c for c in shown.checks if c.status != "skipped"]
    failed = [c for c in graded if c.status == "failed"]
    verdict = (feedback.ui("all_passed", lang) if not failed
               else feedback.ui("some_failed", lang, failed=len(failed), total=len(graded)))
    parts = [f"**{title}**", markdown_text(verdict)]
    if seen.withheld_checks:
        parts.append(markdown_text(feedback.ui("hidden_withheld", lang,
                                               count=seen.withheld_checks,
                                               points=seen.withheld_points)))
    if report.integrity:
        parts.append(markdown_text(feedback.ui("flagged", lang)))
    if report.import_error is not None:
        parts.append(check_markdown(report.import_error, lang))
    return "\n\n".join(parts)


def _informational(report: Report, lang: str) -> list[dict[str, Any]]:
    """Entries worth nothing that a student should still read: the checks skipped for want of
    a device, and the protections the submission ran under."""
    entries = []
    skipped = Counter(c.device for c in report.checks if c.status == "skipped")
    for device, count in skipped.items():
        entries.append({"name": feedback.ui("skipped_title", lang, device=device),
                        "output": markdown_text(feedback.ui("skipped_device", lang, count=count,
                                                            device=device)),
                        "status": "passed", "tags": ["skipped", device],
                        "visibility": "visible"})
    if report.protections:
        entries.append({"name": feedback.ui("protections_title", lang),
                        "output": "\n".join(f"- {markdown_text(p)}" for p in report.protections),
                        "status": "passed", "tags": ["sandbox"], "visibility": "visible"})
    return entries


def results_json(report: Report, *, lang: str = "en", view: View = STUDENT,
                 hidden_visibility: Visibility = "after_published") -> dict[str, Any]:
    """The results.json object for one graded (or ungradable) submission."""
    withheld = hidden_visibility if not view.shows_hidden else "visible"
    tests: list[dict[str, Any]] = []
    per_function: dict[str, int] = {}  # function -> checks numbered so far
    for check in [] if report.error else report.checks:  # not gradable: its one line says all
        if check.status == "skipped":
            continue
        per_function[check.function] = per_function.get(check.function, 0) + 1
        tests.append({
            "name": f"{check.name} [{check.device}]",
            "name_format": "text",
            "number": f"{list(per_function).index(check.function) + 1}."
                      f"{per_function[check.function]}",
            "score": check.score,
            "max_score": check.max_score,
            "status": "passed" if check.status == "passed" else "failed",
            "output": "" if check.status == "passed" else "\n\n".join(
                part for part in (check_markdown(check, lang), reproducer_markdown(check, lang))
                if part),
            "output_format": "md",
            "tags": [check.function, check.kind],
            "visibility": withheld if check.hidden else "visible",
            "extra_data": {"id": check.id, "device": check.device},
        })
    has_hidden = any(c.hidden for c in report.checks) or bool(report.hidden_max_score)
    return {
        "score": report.score,
        "execution_time": round(report.elapsed_s, 3),
        "output": _summary(report, lang, view=view),
        "output_format": "md",
        "test_output_format": "md",
        "test_name_format": "text",
        "visibility": withheld if has_hidden else "visible",
        "stdout_visibility": "hidden",
        "tests": tests + _informational(report, lang),
        # extra_data is for course staff (Gradescope shows students the rest).
        "extra_data": {"lab": report.lab, "grader_version": report.grader_version,
                       "torch_version": report.torch_version,
                       "protections": report.protections, "integrity": report.integrity},
    }


def render(reports: Sequence[Report], *, view: View, lang: str) -> str:
    """results.json for one report (a file Gradescope reads holds exactly one)."""
    (report,) = reports
    return json.dumps(results_json(report, lang=lang, view=view), indent=2) + "\n"


def failure_results(message: str) -> dict[str, Any]:
    """What is written when grading itself could not run: score 0 and the reason, so that
    Gradescope never shows "The autograder failed to execute correctly" without one."""
    return {"score": 0.0, "output": markdown_text(message), "output_format": "md", "tests": []}
