"""The readable feedback file a student gets from a batch run: the `check` report as text.

Plain string formatting rather than the terminal renderer: a class of a thousand is written in
milliseconds, and the file reads the same in any editor.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from grader import feedback
from grader.models import CheckResult, ImportFailure, Report
from grader.render import MARKS, group_failures, shown_status
from grader.views import STUDENT, View


def check_details(check: CheckResult | ImportFailure, lang: str) -> str:
    """A failed check (or the file's import failure) as plain lines: its message, then what
    was expected, what the code did and the hint, each labelled (the test output of
    Gradescope and JUnit)."""
    lines = [check.message]
    lines += [f"{feedback.ui(key, lang)}: {value}" for key, value in
              (("expected", check.expected), ("got", check.got), ("hint", check.hint)) if value]
    return "\n".join(lines)


def explained(check: CheckResult | ImportFailure, lang: str, *, count: int = 1) -> list[str]:
    """A failure as the feedback file shows it: a heading, then its labelled details."""
    labels = {key: feedback.ui(key, lang) for key in ("expected", "got", "hint")}
    width = max(len(label) for label in labels.values()) + 1
    waiting = isinstance(check, CheckResult) and shown_status(check) == "waiting"
    counted = "waiting_checks" if waiting else "failed_checks"
    suffix = f"  ({feedback.ui(counted, lang, count=count)})" if count > 1 else ""
    name = check.name if isinstance(check, CheckResult) else check.file
    lines = [f"{MARKS['waiting' if waiting else 'failed'][0]} {check.message or name}{suffix}"]
    for key, value in (("expected", check.expected), ("got", check.got), ("hint", check.hint)):
        if value:
            lines.append(f"    {labels[key] + ':':<{width}} {value}")
    return lines


def feedback_text(full_report: Report, *, lang: str, view: View = STUDENT) -> str:
    """The student's feedback; hidden checks are left out (and counted) unless released."""
    shown = view.of(full_report)
    report = shown.report
    title = feedback.ui("visible_title" if shown.withholds else "title", lang,
                        lab=report.lab, score=report.score, max_score=report.max_score)
    if report.error:
        return f"{feedback.ui('not_graded', lang, error=report.error)}\n{title}\n"
    graded = [c for c in report.checks if c.status != "skipped"]
    lines = [title, ""]
    for check in graded:
        points = f"{check.score:g}/{check.max_score:g}"
        lines.append(f"{MARKS[shown_status(check)][0]} {points:>7}  {check.name} "
                     f"[{check.device}]")
    if report.import_error is not None:  # one block: the rows only say "not graded"
        lines += ["", *explained(report.import_error, lang)]
    else:
        for same in group_failures([c for c in graded if c.status == "failed"]):
            lines += ["", *explained(same[0], lang, count=len(same))]
    skipped = Counter(c.device for c in report.checks if c.status == "skipped")
    lines += [""] + [feedback.ui("skipped_device", lang, count=n, device=d)
                     for d, n in skipped.items()]
    if shown.withheld_checks:
        lines.append(feedback.ui("hidden_withheld", lang, count=shown.withheld_checks,
                                 points=shown.withheld_points))
    if full_report.integrity:  # the findings themselves are for the instructor
        lines.append(feedback.ui("flagged", lang))
    return "\n".join(lines).rstrip() + "\n"


def render(reports: Sequence[Report], *, view: View, lang: str) -> str:
    """Feedback files, one after another."""
    return "\n".join(feedback_text(report, lang=lang, view=view) for report in reports)
