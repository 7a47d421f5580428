"""Gradebook CSV files that Canvas and Moodle import: one assignment, one row per student.

Pure functions of the class's standings (and an optional roster); nothing is read or written
here. What each LMS does with the file decides what goes in it:

- Canvas (app/models/gradebook_importer.rb and the upload's review page): the header must start
  `Student, ID` and end its student columns with `Section`; students are matched by ID, then
  SIS User ID, then SIS Login ID, then name; a column titled `Title (id)` updates assignment
  `id`, any other title updates the assignment of that exact title or creates one; a
  `Points Possible` row gives its points; columns whose title contains `Final Grade`,
  `Current Score`, ... are silently dropped.
- Moodle (grade/import/csv/classes/load_data.php): one column identifies the user (email,
  username or ID number); an unknown user or a grade that is not a number aborts the whole
  import, and so does a grade above 100 unless the site allows unlimited grades.

In both, an empty grade cell is a change: Canvas lists it as a removed score and Moodle clears
the grade. So a student who could not be graded, or who has no report, is left out of the file
(with a warning): a row that is not a grade never overwrites one in the LMS.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from grader import feedback
from grader.errors import UsageError
from grader.exporters.spreadsheet import safe_row
from grader.roster import Roster, RosterEntry
from grader.student_files import caseless
from grader.summary import NOT_GRADABLE, Standing

CANVAS_STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
# Canvas drops every column whose title contains one of these (an unanchored, case-sensitive
# regex), and Unposted, which starts the titles of the totals Canvas exports for unposted scores.
CANVAS_IGNORED_TITLES = ("Current Score", "Current Points", "Current Grade", "Final Score",
                         "Final Points", "Final Grade", "Override Score", "Override Grade",
                         "Override Status", "Unposted")
CANVAS_ID_COLUMNS = frozenset({"canvas_id", "sis_user_id", "sis_login_id"})
MOODLE_IDENTIFIERS = {"email": "Email address", "username": "Username",
                      "idnumber": "ID number"}  # roster column -> header (useremail, ...)
MOODLE_FEEDBACK = "Feedback"
MOODLE_TIME_EXPORTED = "Last downloaded from this course"  # never written: see the docs
MOODLE_MAX_GRADE = 100.0  # above it Moodle aborts the import unless grades are unlimited
FAILED_NAMED = 3  # failed checks named in Moodle feedback


class ExportError(UsageError):
    """An export that cannot be made as asked (one line, with what to do instead)."""


@dataclass(frozen=True)
class ExportResult:
    text: str  # the CSV file
    rows: int  # students in it
    warnings: list[str] = field(default_factory=list)  # one line each, by student


@dataclass(frozen=True)
class _Row:
    standing: Standing
    entry: RosterEntry | None


def number(value: float) -> str:
    """A score as an LMS reads it: at most 2 decimals, no trailing zeros (84, 61.5, 72.62)."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _grade(student: Standing, *, percent: bool) -> float:
    return round(student.percent, 2) if percent else student.score


def _rows(standings: Iterable[Standing], roster: Roster | None,
          warnings: list[str], *, zero_missing: bool = False) -> list[_Row]:
    """The students that get a row: graded, and in the roster when there is one. With
    `zero_missing`, a not gradable row (an empty or unreadable file) and a roster student with
    no report get 0 instead of being left out."""
    by_student: dict[str, Standing] = {}
    for student in standings:
        if student.student in by_student:
            warnings.append(f"{student.student}: two reports; the first is exported")
            continue
        by_student[student.student] = student
    if roster is not None:
        near = {caseless(e.student): e.student for e in roster.entries}
        for name in sorted(set(by_student) - {e.student for e in roster.entries}):
            twin = near.get(caseless(name))
            close = (f"; the roster's `{twin}` differs only in case or accents and is not "
                     "taken for it" if twin else "")
            warnings.append(f"{name}: has a report, but is not in the roster {roster.source}"
                            f"{close}: left out (add a roster row to export it)")
        maxima = Counter(student.max_score for student in by_student.values())
        most = max(maxima, key=lambda value: (maxima[value], value)) if maxima else 0.0
        for entry in roster.entries:
            if entry.student in by_student:
                continue
            if zero_missing:
                by_student[entry.student] = Standing(
                    student=entry.student, score=0.0, max_score=most, error="no submission",
                    points={}, failed={}, status=NOT_GRADABLE)
                warnings.append(f"{entry.student}: in the roster, but no report: exported as "
                                "0 (--zero-missing)")
            else:
                warnings.append(f"{entry.student}: in the roster, but no report: left out "
                                "(their grade in the LMS is unchanged)")
        candidates = [_Row(by_student[e.student], e) for e in roster.entries
                      if e.student in by_student]
    else:
        candidates = [_Row(by_student[name], None) for name in sorted(by_student)]
    rows = []
    for row in candidates:
        if zero_missing and row.standing.status == NOT_GRADABLE:
            rows.append(_Row(replace(row.standing, score=0.0), row.entry))
        elif row.standing.status == NOT_GRADABLE:  # a file that did not import scored 0
            warnings.append(f"{row.standing.student}: not graded ({row.standing.error}): left "
                            "out (their grade in the LMS is unchanged)")
        else:
            rows.append(row)
    return rows


def _points_possible(rows: list[_Row], warnings: list[str]) -> float:
    """The assignment's points: what most graded students could earn."""
    counts = Counter(row.standing.max_score for row in rows)
    if not counts:
        return 0.0
    possible = max(counts, key=lambda value: (counts[value], value))
    for row in rows:
        if row.standing.max_score != possible:
            warnings.append(f"{row.standing.student}: graded out of "
                            f"{number(row.standing.max_score)} points, not {number(possible)}; "
                            "export percentages to compare them (--percent)")
    return possible


def canvas_csv(standings: Iterable[Standing], *, assignment: str,
               assignment_id: str | None = None, roster: Roster | None = None,
               percent: bool = False, zero_missing: bool = False) -> ExportResult:
    """A file for Canvas's Grades > Import. Without a roster our student id is the SIS Login
    ID (and the name); with one, the roster's ids. With `assignment_id` the column updates
    that assignment; without it, the one titled `assignment`, or a new one."""
    title = assignment.strip()
    if not title:
        raise ExportError("the assignment title is empty; pass --assignment NAME")
    ignored = [word for word in CANVAS_IGNORED_TITLES if word in title]
    if ignored:
        raise ExportError(f"assignment title {title!r} contains {ignored[0]!r}: Canvas "
                          "silently drops such columns on import; choose another title")
    if assignment_id is not None and not assignment_id.strip().isdigit():
        raise ExportError(f"assignment id {assignment_id!r} is not a number; use the number "
                          "at the end of the assignment's address (.../assignments/1234)")
    header = f"{title} ({assignment_id.strip()})" if assignment_id is not None else title

    warnings: list[str] = []
    roster_has_ids = roster is not None and bool(roster.columns & CANVAS_ID_COLUMNS)
    if roster is not None and not roster_has_ids:
        warnings.append(f"{roster.source} has no canvas_id, sis_user_id or sis_login_id "
                        "column: Canvas will match students by name only")
    rows = _rows(standings, roster, warnings, zero_missing=zero_missing)
    possible = 100.0 if percent else _points_possible(rows, warnings)

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(safe_row([*CANVAS_STUDENT_COLUMNS, header]))
    writer.writerow(["Points Possible", "", "", "", "", number(possible)])
    for row in rows:
        student, entry = row.standing, row.entry
        if entry is None:
            identity = [student.student, "", "", student.student, ""]
        else:
            if roster_has_ids and not (entry.canvas_id or entry.sis_user_id
                                       or entry.sis_login_id):
                warnings.append(f"{student.student}: no canvas_id, sis_user_id or "
                                f"sis_login_id in the roster (line {entry.line}): Canvas "
                                "will match them by name only")
            identity = [entry.name or student.student, entry.canvas_id, entry.sis_user_id,
                        entry.sis_login_id, entry.section]
        writer.writerow(safe_row([*identity, number(_grade(student, percent=percent))]))
    return ExportResult(text=buffer.getvalue(), rows=len(rows), warnings=warnings)


def moodle_feedback(student: Standing, lang: str = "en") -> str:
    """One line for the student: points, and the first failed checks by name."""
    line = feedback.ui("lms_points", lang, score=number(student.score),
                       max_score=number(student.max_score))
    names = list(dict.fromkeys(student.failed.values()))  # in report order, each once
    if names:
        more = len(names) - FAILED_NAMED
        line += "; " + feedback.ui("lms_failed", lang, names=", ".join(names[:FAILED_NAMED]))
        if more > 0:
            line += " " + feedback.ui("lms_more", lang, count=more)
    return line


def _moodle_identifier(roster: Roster | None) -> str:
    """The roster column that identifies users: email, else username, else ID number."""
    if roster is not None:
        for column in MOODLE_IDENTIFIERS:
            if roster.has_any(column):
                return column
    return "username"  # no roster (or no Moodle ids in it): our student id is the username


def moodle_csv(standings: Iterable[Standing], *, assignment: str,
               roster: Roster | None = None, percent: bool = False,
               lang: str = "en", zero_missing: bool = False) -> ExportResult:
    """A file for Moodle's Grade administration > Import > CSV file: the user column, the grade
    column (named `assignment`) and `Feedback`. Users are identified by the roster's email,
    else username, else ID number; without a roster our student id is the username."""
    title = assignment.strip()
    column = _moodle_identifier(roster)
    reserved = (MOODLE_FEEDBACK, MOODLE_TIME_EXPORTED, MOODLE_IDENTIFIERS[column])
    if not title:
        raise ExportError("the assignment name is empty; pass --assignment NAME")
    if title in reserved:
        raise ExportError(f"assignment name {title!r} is also the name of another column of "
                          "the file; choose another name")

    warnings: list[str] = []
    from_roster = roster is not None and roster.has_any(column)
    if roster is not None and not from_roster:
        warnings.append(f"{roster.source} has no email, username or idnumber values: the "
                        "student ids are exported as Moodle usernames")
    rows = _rows(standings, roster, warnings, zero_missing=zero_missing)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(safe_row([MOODLE_IDENTIFIERS[column], title, MOODLE_FEEDBACK]))
    written = 0
    highest = 0.0
    for row in rows:
        student, entry = row.standing, row.entry
        user = getattr(entry, column) if from_roster and entry else student.student
        if not user:  # Moodle would give this row's grade to the user of the row before it
            where = f"in the roster (line {entry.line})" if entry is not None else "(no id)"
            warnings.append(f"{student.student}: no {column} {where}: left out")
            continue
        grade = _grade(student, percent=percent)
        highest = max(highest, grade)
        writer.writerow(safe_row([user, number(grade), moodle_feedback(student, lang)]))
        written += 1
    if highest > MOODLE_MAX_GRADE:
        warnings.append(f"grades go up to {number(highest)}: Moodle aborts the import on a "
                        f"grade above {number(MOODLE_MAX_GRADE)} unless the site allows "
                        "unlimited grades; export percentages instead (--percent)")
    return ExportResult(text=buffer.getvalue(), rows=written, warnings=warnings)
