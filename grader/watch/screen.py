"""The screen of `check --watch`: each run's report, what changed since the last one, and
what the loop waits for. A terminal is cleared before each run; a log or a pipe gets the runs
one after another, each under a rule that numbers it."""

from __future__ import annotations

import time
import traceback

from rich.console import Console
from rich.text import Text

from grader import feedback
from grader.models import CheckResult
from grader.render import MARKS, print_import_failure, render_text
from grader.watch.loop import Changes, Run

NAMES_SHOWN = 8  # per direction; a whole lab turning green is a count, not a page of names


def draw(run: Run, console: Console, *, lang: str, debug: bool = False,
         failed_only: bool = False) -> None:
    """One run: cleared screen (a terminal) or a rule (anything else), the run, the changes,
    then the line that says the file is watched."""
    if console.is_terminal:
        console.clear()
    console.rule(feedback.ui("watch_run", lang, number=run.number,
                             time=time.strftime("%H:%M:%S")), style="dim")
    if run.report is not None:
        render_text(run.report, console, lang=lang, debug=debug, failed_only=failed_only)
    elif run.import_failure is not None:
        print_import_failure(console, run.import_failure, lang=lang, debug=debug, watching=True)
    else:
        console.print(Text(feedback.ui("not_graded", lang, error=run.problem), style="red"),
                      soft_wrap=True)
        if debug and run.error is not None:
            console.print(Text("".join(traceback.format_exception(run.error)).rstrip(),
                               style="dim"), markup=False, soft_wrap=True)
    if run.changes is not None:
        print_changes(console, run.changes, lang=lang)
    console.print()
    console.print(feedback.ui("watch_waiting", lang, file=run.path.name or str(run.path)),
                  style="dim", markup=False, soft_wrap=True)


def print_changes(console: Console, changes: Changes, *, lang: str) -> None:
    """Since the last run: a count each way, then the checks by name."""
    console.print()
    passing, failing = changes.newly_passing, changes.newly_failing
    if not passing and not failing:
        console.print(feedback.ui("watch_unchanged", lang), style="bold", soft_wrap=True)
        return
    console.print(feedback.ui("watch_since", lang, passing=len(passing), failing=len(failing)),
                  style="bold", soft_wrap=True)
    for status, checks in (("passed", passing), ("failed", failing)):
        _print_names(console, status, checks, lang=lang)


def _print_names(console: Console, status: str, checks: tuple[CheckResult, ...], *,
                 lang: str) -> None:
    mark, color = MARKS[status]
    for check in checks[:NAMES_SHOWN]:
        line = Text("  ")
        line.append(mark, style=color)
        line.append(f" {check.name}")
        if check.device != "cpu":
            line.append(f"  [{check.device}]", style="dim")
        console.print(line, soft_wrap=True)
    if len(checks) > NAMES_SHOWN:
        console.print(Text("    " + feedback.ui("watch_more", lang,
                                                count=len(checks) - NAMES_SHOWN), style="dim"))
