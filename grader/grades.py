"""The grades folder: where a class's results live and how they are read back.

Reports (one JSON per student, keyed by the student's exact name), feedback files, the
gradebook and the class report page. Every writer (`grade`, the cluster, the LMS entry points,
the CLI's exports) writes through `write_atomically`, so a reader never sees half a file; every
reader goes through `iter_reports`, one report in memory at a time.
"""

from __future__ import annotations

import csv
import json
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from grader.errors import UsageError
from grader.exporters.gradebook import gradebook_csv
from grader.exporters.text import feedback_text
from grader.labs import get_lab
from grader.models import Report
from grader.student_files import file_stem
from grader.summary import ClassSummary, Standing, summarize, summary_text
from grader.views import View

REPORTS = "reports"
FEEDBACK = "feedback"
REPORT_FILE = "report.html"  # the class report page (exporters/html_report.py)


def report_path(out: Path, student: str) -> Path:
    """Where `student`'s report is: one file per exact name (student_files.file_stem)."""
    return out / REPORTS / f"{file_stem(student)}.json"


def write_atomically(path: Path, text: str) -> None:
    """Write to a temporary file, then rename: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def iter_reports(out: Path) -> Iterator[Report]:
    """The reports on disk, one at a time (unreadable ones skipped, and a report filed under
    another name than its student's where that student's own file exists: a leftover)."""
    for path in sorted((out / REPORTS).glob("*.json")):
        try:
            report = Report.model_validate_json(path.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            continue
        own = report_path(out, report.student)
        if path.name == own.name or not own.exists():
            yield report


def load_reports(out: Path) -> list[Report]:
    return list(iter_reports(out))


def previous_report(out: Path, student: str) -> Report | None:
    """The report written for exactly this student, if any."""
    try:
        report = Report.model_validate_json(report_path(out, student).read_text(
            encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return report if report.student == student else None


def write_class_report(out: Path, *, lab: str, lang: str = "en",
                       students: Iterable[str] | None = None) -> Path:
    """Write OUT/report.html from the reports in OUT/reports (as `grade` wrote them; only
    those of `students` where given, as the gradebook), at once or not at all: a browser open
    on the old page never reads half a new one. One report in memory at a time."""
    if not out.is_dir():
        raise UsageError(f"{out}: no such folder; run `inplace-grader grade SUBMISSIONS "
                         f"--lab {lab} --out {out}` first")
    wanted = None if students is None else set(students)

    def of_this_lab() -> Iterator[Report]:
        for report in iter_reports(out):
            if report.lab != lab:  # nothing is written: the page is whole or not at all
                raise UsageError(mixed_labs(out, {lab, report.lab}))
            if wanted is None or report.student in wanted:
                yield report

    from grader.exporters.html_report import class_report_html  # matplotlib: loaded here only

    path = out / REPORT_FILE
    write_atomically(path, class_report_html(of_this_lab(), lab=lab, lang=lang))
    return path


def gradebook_students(out: Path) -> list[str] | None:
    """The students of OUT/gradebook.csv (the last run's class), or None where there is none:
    `inplace-grader report` shows the class the gradebook shows, not every report on disk."""
    try:
        with (out / "gradebook.csv").open(encoding="utf-8", newline="") as handle:
            return [row["student"] for row in csv.DictReader(handle) if row.get("student")]
    except (OSError, KeyError, csv.Error):
        return None


def labs_in(out: Path) -> set[str]:
    """The labs of the reports already in an --out folder (unreadable reports skipped)."""
    return {graded.lab for graded in graded_in(out)}


class GradedWith(NamedTuple):
    """How a report already in an --out folder was graded: what a re-run must not drop."""

    lab: str
    hidden: bool  # with hidden cases
    rubric_key: str  # "" for a report from before rubric keys


def graded_in(out: Path) -> set[GradedWith]:
    """How each report already in an --out folder was graded (unreadable reports skipped)."""
    found = set()
    for path in (out / REPORTS).glob("*.json"):
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
            lab, key = report.get("lab"), report.get("rubric_key", "")
            hidden = any(isinstance(c, dict) and c.get("hidden") is True
                         for c in report.get("checks") or [])
        except (OSError, ValueError, AttributeError, TypeError):
            continue
        if isinstance(lab, str) and isinstance(key, str):
            found.add(GradedWith(lab, hidden, key))
    return found


def mixed_labs(folder: Path, labs: set[str]) -> str:
    """What `grade` and `export` say of a folder holding reports of more than one lab."""
    return (f"{folder}: reports of several labs ({', '.join(sorted(labs))}); grade each lab "
            "into its own --out folder")


def save_student(out: Path, report: Report, *, lang: str, release: bool, reused: bool) -> None:
    """The report (unless reused from disk) and the student's feedback, always rewritten: a
    re-run with `--release` shows hidden results without regrading."""
    if not reused:
        write_atomically(report_path(out, report.student),
                         report.model_dump_json(indent=2))
    write_atomically(out / FEEDBACK / f"{file_stem(report.student)}.txt",
                     feedback_text(report, lang=lang,
                                   view=View(release=release)))


def write_class_files(out: Path, standings: list[Standing], *, lab: str, lang: str) -> ClassSummary:
    """Gradebook, summary and the class report page, rebuilt from the reports on disk."""
    functions = list(get_lab(lab).functions)
    write_atomically(out / "gradebook.csv",
                     gradebook_csv(standings, functions=functions))
    summary = summarize(standings)
    write_atomically(out / "summary.txt", summary_text(summary))
    write_atomically(out / "summary.json", json.dumps(
        {"students": summary.students, "graded": summary.graded,
         "not_imported": summary.not_imported, "not_gradable": summary.not_gradable,
         "mean_percent": summary.mean_percent, "median_percent": summary.median_percent,
         "distribution": summary.distribution,
         "most_failed": [vars(f) for f in summary.most_failed],
         "flagged": [{"student": student, "findings": findings}
                     for student, findings in summary.flagged]}, indent=2))
    write_class_report(out, lab=lab, lang=lang,
                       students=[s.student for s in standings])
    return summary
