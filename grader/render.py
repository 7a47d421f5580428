"""The terminal report a student reads at a glance: a table, then each failure explained."""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Iterator

from rich.cells import cell_len
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from grader import feedback
from grader.models import CheckResult, ImportFailure, Report

MARKS = {"passed": ("✓", "green"), "failed": ("✗", "red"), "skipped": ("–", "dim"),
         "waiting": ("⧗", "yellow")}


def shown_status(check: CheckResult) -> str:
    """The status as a reader sees it: a failed check that only waits on another one
    passing (its `waits_on`) is "waiting", not a mistake (issue 30)."""
    return "waiting" if check.status == "failed" and check.waits_on else check.status


def render_text(report: Report, console: Console, *, lang: str, debug: bool = False,
                failed_only: bool = False) -> None:
    """The report for a terminal or a log. `failed_only`: the table lists failed checks,
    and each function whose checks all passed is one line."""
    if report.error:
        console.print(Text(feedback.ui("not_graded", lang, error=report.error), style="red"))
        console.print(Text(feedback.ui("title", lang, lab=report.lab, score=report.score,
                                       max_score=report.max_score), style="bold"))
        return
    graded = [c for c in report.checks if c.status != "skipped"]
    failed = [c for c in graded if c.status == "failed"]
    shown = failed if failed_only else graded
    if shown:
        table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
        table.add_column("")
        table.add_column(feedback.ui("check", lang))
        table.add_column(feedback.ui("device", lang), style="dim")
        table.add_column(feedback.ui("points", lang), justify="right")
        for row in screen_rows(shown):
            check = row[0]
            mark, color = MARKS[shown_status(check)]
            if len(row) > 1:  # one reason for most of a function's checks: one line
                reason = (check.message if check.message.startswith(check.function)
                          else f"{check.function}: {check.message}")
                name = Text(feedback.ui("folded_checks", lang, reason=reason, count=len(row)))
            else:
                name = Text(check.name)
                if check.hidden:
                    name.append(f" [{feedback.ui('hidden_tag', lang)}]", style="dim")
                name.append(f" [{check.id}]" if check.status == "failed" else "", style="dim")
            table.add_row(Text(mark, style=color), name, check.device,
                          f"{sum(c.score for c in row):g}/{sum(c.max_score for c in row):g}")
        console.print(table)
    if failed_only:
        for function in dict.fromkeys(c.function for c in graded):
            own = [c for c in graded if c.function == function]
            if all(c.status == "passed" for c in own):
                console.print(feedback.ui(
                    "function_passed", lang, function=function, count=len(own),
                    score=sum(c.score for c in own), max_score=sum(c.max_score for c in own)),
                    style="green", soft_wrap=True)
    if report.import_error is not None:  # one block: the rows only say "not graded"
        console.print()
        _print_failure(console, report.import_error, lang=lang, debug=debug, count=1)
    else:
        for same in group_failures(failed):
            console.print()
            _print_failure(console, same[0], lang=lang, debug=debug, count=len(same))
    console.print()
    for device, count in Counter(c.device for c in report.checks
                                 if c.status == "skipped").items():
        console.print(feedback.ui("skipped_device", lang, count=count, device=device),
                      style="dim")
    console.print(Text(feedback.ui("title", lang, lab=report.lab, score=report.score,
                                   max_score=report.max_score), style="bold"))
    waiting = sum(shown_status(c) == "waiting" for c in failed)
    summary = (feedback.ui("all_passed", lang) if not failed
               else feedback.ui("some_failed_waiting", lang, failed=len(failed) - waiting,
                                total=len(graded), waiting=waiting) if waiting
               else feedback.ui("some_failed", lang, failed=len(failed), total=len(graded)))
    console.print(summary, style="green" if not failed else "red")
    if report.integrity:
        console.print(feedback.ui("flagged", lang), style="yellow")
    if debug:
        _print_output(console, report, lang=lang)
    if failed and not debug and (any(c.debug for c in failed) or (
            report.import_error is not None and report.import_error.debug)):
        console.print(feedback.ui("debug_hint", lang), style="dim")


# A function's failures that share one reason fold into one line from this many checks on,
# where they are most of its checks on that device (a stub: "not implemented").
FOLD_AT = 3


def screen_rows(checks: list[CheckResult]) -> list[list[CheckResult]]:
    """The table's rows, what matters first (issue 30): each function's failed and waiting
    checks, functions in the report's order, then the passed ones. A function's failures on
    one device with one message, at least FOLD_AT of them and most of its checks there, are
    one row (a list of several checks); every other row is one check."""
    failing = [c for c in checks if c.status == "failed"]
    rows: list[list[CheckResult]] = []
    for function in dict.fromkeys(c.function for c in failing):
        own = [c for c in failing if c.function == function]
        same: dict[tuple[str, str, str], list[CheckResult]] = {}
        for check in own:
            same.setdefault((check.device, shown_status(check), check.message), []).append(check)
        for (device, _, _), group in same.items():
            there = sum(c.function == function and c.device == device for c in checks)
            if len(group) >= FOLD_AT and 2 * len(group) > there:
                rows.append(group)
            else:
                rows += [[check] for check in group]
    return rows + [[c] for c in checks if c.status != "failed"]


def print_import_failure(console: Console, failure: ImportFailure, *, lang: str,
                         debug: bool = False, watching: bool = False) -> None:
    """A file that does not parse, told before anything ran: the block a full report shows,
    and what to do next (`watching`: save the file again, as `check --watch` runs)."""
    _print_failure(console, failure, lang=lang, debug=debug, count=1)
    console.print()
    next_step = "watch_nothing_graded" if watching else "nothing_graded"
    console.print(feedback.ui(next_step, lang, file=failure.file), style="red")
    if not debug and failure.debug:
        console.print(feedback.ui("debug_hint", lang), style="dim")


_CODE_SPAN = re.compile(r"`[^`]*`")


def wrap(text: str, *, width: int) -> list[str]:
    """`text` in lines of at most `width` cells, broken between words only and never inside
    a `code span`; a word longer than a line stays whole, and a line break in `text` is
    kept. Cells, not characters: Korean text is two cells a character."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        words = _CODE_SPAN.sub(lambda span: span[0].replace(" ", "\0"),
                               paragraph).split()
        line = ""
        for word in words:
            if line and cell_len(f"{line} {word}".replace("\0", " ")) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    return [part.replace("\0", " ") for part in lines]


def _print_wrapped(console: Console, prefix: Text, value: str, style: str) -> None:
    """`prefix` then `value`, wrapped to the terminal with a hanging indent under the value.
    Not wrapped at all where the output is not a terminal (a CI or LMS log wraps itself)."""
    indent = prefix.cell_len
    width = console.width if console.is_terminal else 10**9
    parts = wrap(value, width=max(width - indent, 20))
    for index, part in enumerate(parts):
        line = prefix.copy() if index == 0 else Text(" " * indent)
        line.append(part, style=style)
        console.print(line, soft_wrap=True)


def group_failures(failed: list[CheckResult]) -> list[list[CheckResult]]:
    """Checks that failed for the same reason, together: one explanation each."""
    groups: dict[tuple[str, ...], list[CheckResult]] = {}
    for check in failed:
        key = (check.function, check.message, check.expected, check.got, check.hint)
        groups.setdefault(key, []).append(check)
    return list(groups.values())


def _print_failure(console: Console, check: CheckResult | ImportFailure, *, lang: str,
                   debug: bool, count: int) -> None:
    waiting = isinstance(check, CheckResult) and shown_status(check) == "waiting"
    suffix = ""
    if count > 1:
        key = "waiting_checks" if waiting else "failed_checks"
        suffix += f"  ({feedback.ui(key, lang, count=count)})"
    if isinstance(check, CheckResult) and check.device != "cpu":
        suffix += f"  [{check.device}]"
    heading = check.message or (check.name if isinstance(check, CheckResult) else check.file)
    mark, color = MARKS["waiting" if waiting else "failed"]
    _print_wrapped(console, Text(f"{mark} ", style=color), heading + suffix, "bold")
    width = max(len(feedback.ui(k, lang)) for k in ("expected", "got", "hint")) + 1
    for key, value in (("expected", check.expected), ("got", check.got), ("hint", check.hint)):
        if value:
            label = f"{feedback.ui(key, lang) + ':':<{width}}"
            _print_wrapped(console, Text(f"    {label} ", style="dim"), value,
                           "yellow" if key == "hint" else "")
    if debug and check.debug:
        console.print(Text(check.debug.rstrip(), style="dim"), markup=False, soft_wrap=True)


def _print_output(console: Console, report: Report, *, lang: str) -> None:
    """--debug: what the code printed, at import and per function, passing or not."""
    console.print()
    if not report.output:
        console.print(feedback.ui("printed_nothing", lang), style="dim")
        return
    for printed in report.output:
        where = (feedback.ui("printed_at_import", lang) if not printed.function
                 else feedback.ui("printed_by", lang, function=printed.function,
                                  device=printed.device))
        console.print(Text(where, style="bold"))
        console.print(Text(printed.text.rstrip()), markup=False)


class _Bar:
    """Progress of a batch run: bar, count, submissions per second, ETA, and the student
    graded last, named in full (a long name is never cut mid-word)."""

    def __init__(self, progress: Progress, lang: str) -> None:
        self._progress = progress
        self._lang = lang
        self._task = progress.add_task(feedback.ui("grading_progress", lang), total=None,
                                       student="")

    def start(self, total: int) -> None:
        self._progress.update(self._task, total=total)

    def advance(self, student: str, report: Report, reused: bool) -> None:
        self._progress.update(self._task, advance=1, student=student)
        task = self._progress.tasks[0]
        if task.total is not None and task.completed >= task.total:
            self._progress.update(self._task, student="",
                                  description=feedback.ui("graded_progress", self._lang))


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:.1f}/s" if speed else "", style="cyan")


@contextlib.contextmanager
def progress_bar(console: Console, *, lang: str = "en") -> Iterator[_Bar]:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               _RateColumn(), TimeRemainingColumn(), TextColumn("{task.fields[student]}"))
    with Progress(*columns, console=console, transient=False) as progress:
        yield _Bar(progress, lang)
