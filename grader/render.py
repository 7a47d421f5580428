"""The terminal report a student reads at a glance: a table, then each failure explained."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator

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

MARKS = {"passed": ("✓", "green"), "failed": ("✗", "red"), "skipped": ("–", "dim")}


def render_text(report: Report, console: Console, *, lang: str, debug: bool = False) -> None:
    if report.error:
        console.print(Text(feedback.ui("not_graded", lang, error=report.error), style="red"))
        console.print(Text(feedback.ui("title", lang, lab=report.lab, score=report.score,
                                       max_score=report.max_score), style="bold"))
        return
    graded = [c for c in report.checks if c.status != "skipped"]
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    table.add_column("")
    table.add_column(feedback.ui("check", lang))
    table.add_column("device", style="dim")
    table.add_column(feedback.ui("points", lang), justify="right")
    for check in graded:
        mark, color = MARKS[check.status]
        name = Text(check.name)
        if check.hidden:
            name.append(f" [{feedback.ui('hidden_tag', lang)}]", style="dim")
        table.add_row(Text(mark, style=color), name, check.device,
                      f"{check.score:g}/{check.max_score:g}")
    console.print(table)
    failed = [c for c in graded if c.status == "failed"]
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
    summary = (feedback.ui("all_passed", lang) if not failed
               else feedback.ui("some_failed", lang, failed=len(failed), total=len(graded)))
    console.print(summary, style="green" if not failed else "red")
    if report.integrity:
        console.print(feedback.ui("flagged", lang), style="yellow")
    if debug:
        _print_output(console, report, lang=lang)
    if failed and not debug and (any(c.debug for c in failed) or (
            report.import_error is not None and report.import_error.debug)):
        console.print(feedback.ui("debug_hint", lang), style="dim")


def group_failures(failed: list[CheckResult]) -> list[list[CheckResult]]:
    """Checks that failed for the same reason, together: one explanation each."""
    groups: dict[tuple[str, ...], list[CheckResult]] = {}
    for check in failed:
        key = (check.function, check.message, check.expected, check.got, check.hint)
        groups.setdefault(key, []).append(check)
    return list(groups.values())


def _print_failure(console: Console, check: CheckResult | ImportFailure, *, lang: str,
                   debug: bool, count: int) -> None:
    heading = Text("✗ ", style="red")
    heading.append(check.message or getattr(check, "name", ""), style="bold")
    if count > 1:
        heading.append(f"  ({feedback.ui('failed_checks', lang, count=count)})", style="dim")
    if isinstance(check, CheckResult) and check.device != "cpu":
        heading.append(f"  [{check.device}]", style="dim")
    console.print(heading)
    width = max(len(feedback.ui(k, lang)) for k in ("expected", "got", "hint")) + 1
    for key, value in (("expected", check.expected), ("got", check.got), ("hint", check.hint)):
        if value:
            label = f"{feedback.ui(key, lang) + ':':<{width}}"
            line = Text(f"    {label} ", style="dim")
            line.append(value, style="yellow" if key == "hint" else "")
            console.print(line)
    if debug and check.debug:
        console.print(Text(check.debug.rstrip(), style="dim"), markup=False)


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
    """Progress of a batch run: bar, count, submissions per second, ETA."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task = progress.add_task("grading", total=None)

    def start(self, total: int) -> None:
        self._progress.update(self._task, total=total)

    def advance(self, student: str, report: Report, reused: bool) -> None:
        self._progress.update(self._task, advance=1, description=f"grading {student[:20]}")


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:.1f}/s" if speed else "", style="cyan")


@contextlib.contextmanager
def progress_bar(console: Console) -> Iterator[_Bar]:
    columns = (TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(),
               _RateColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        yield _Bar(progress)
