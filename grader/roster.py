"""The class roster: who each graded student is in the LMS.

A roster is a CSV file with a header row. Its `student` column holds the id inplace-grader uses
(the submission's file or folder name); the optional columns say who that student is in
Canvas (`name`, `canvas_id`, `sis_user_id`, `sis_login_id`, `section`) and in Moodle (`email`,
`username`, `idnumber`). Headers are case-insensitive (`Canvas ID` reads as `canvas_id`), a
UTF-8 byte-order mark is tolerated, other columns are ignored. Every problem is one line naming
the file and the line.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from grader.errors import UsageError
from grader.student_files import caseless

OPTIONAL_COLUMNS = ("name", "canvas_id", "sis_user_id", "sis_login_id", "section",
                    "email", "username", "idnumber")


class RosterError(UsageError):
    """A roster that cannot be used: one line, naming the file and the line."""


@dataclass(frozen=True)
class RosterEntry:
    student: str
    name: str = ""
    canvas_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    email: str = ""
    username: str = ""
    idnumber: str = ""
    line: int = 0  # where it is in the roster file, for messages


@dataclass(frozen=True)
class Roster:
    source: str
    entries: tuple[RosterEntry, ...]
    columns: frozenset[str]  # the optional columns the file has
    _by_student: Mapping[str, RosterEntry] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index = MappingProxyType({entry.student: entry for entry in self.entries})
        object.__setattr__(self, "_by_student", index)  # frozen: set once, here

    def get(self, student: str) -> RosterEntry | None:
        return self._by_student.get(student)

    def __contains__(self, student: object) -> bool:
        return student in self._by_student

    def __len__(self) -> int:
        return len(self.entries)

    def has_any(self, column: str) -> bool:
        """Whether some student has a value in `column`."""
        return any(getattr(entry, column) for entry in self.entries)


def _column_key(header: str) -> str:
    return "_".join(header.strip().lower().replace("-", " ").split())


def parse_roster(text: str, *, source: str) -> Roster:
    """The roster in `text` (CSV with a header row); `source` names it in errors."""
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""))
    try:
        header = next(reader, None)
        while header is not None and not any(cell.strip() for cell in header):
            header = next(reader, None)  # blank lines before the header
        if header is None:
            raise RosterError(f"{source}: empty; the first line must be a header with a "
                              "`student` column")
        header_line = reader.line_num
        keys = [_column_key(cell) for cell in header]
        for position, key in enumerate(keys):
            if key and key in keys[:position]:
                raise RosterError(f"{source}: line {header_line}: column `{key}` appears "
                                  "twice; keep one")
        if "student" not in keys:
            found = ", ".join(k for k in keys if k) or "none"
            raise RosterError(f"{source}: line {header_line}: no `student` column (columns: "
                              f"{found}); add a `student` column holding each submission's "
                              "file or folder name")
        wanted = {key: position for position, key in enumerate(keys)
                  if key == "student" or key in OPTIONAL_COLUMNS}
        entries: list[RosterEntry] = []
        first_line: dict[str, int] = {}
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if any(cell.strip() for cell in row[len(keys):]):
                raise RosterError(f"{source}: line {line}: {len(row)} values but the header "
                                  f"has {len(keys)} columns (a comma inside a value needs "
                                  "quotes)")
            values = {key: row[position].strip() if position < len(row) else ""
                      for key, position in wanted.items()}
            student = values.pop("student")
            if not student:
                raise RosterError(f"{source}: line {line}: no student id; every row needs "
                                  "the student's submission file or folder name")
            if student in first_line:
                raise RosterError(f"{source}: line {line}: student `{student}` is listed "
                                  f"twice (first on line {first_line[student]}); keep one row")
            canvas_id = values.get("canvas_id", "")
            if canvas_id and not canvas_id.isdigit():
                raise RosterError(f"{source}: line {line}: canvas_id `{canvas_id}` is not a "
                                  "number (Canvas user ids are numbers); leave it blank to "
                                  "match by SIS id")
            first_line[student] = line
            entries.append(RosterEntry(student=student, line=line, **values))
    except csv.Error as exc:
        raise RosterError(f"{source}: line {reader.line_num}: not valid CSV ({exc})") from exc
    _refuse_shared_ids(entries, source=source)
    columns = frozenset(key for key in wanted if key != "student")
    return Roster(source=source, entries=tuple(entries), columns=columns)


# The columns that name one LMS user; an LMS compares them without case (Canvas's login ids,
# Moodle's lowercased usernames), so two rows equal but for case are one user there.
_LMS_IDS = ("canvas_id", "sis_user_id", "sis_login_id", "email", "username", "idnumber")


def _refuse_shared_ids(entries: list[RosterEntry], *, source: str) -> None:
    """RosterError where two rows would be one person: student ids that differ only in case
    or in how accents are encoded (student_files.caseless), or one LMS id on two rows: an
    export would put two students' grades in one LMS row."""
    for column in ("student", *_LMS_IDS):
        seen: dict[str, RosterEntry] = {}
        for entry in entries:
            value = getattr(entry, column)
            if not value:
                continue
            first = seen.setdefault(caseless(value), entry)
            if first is not entry:
                raise RosterError(
                    f"{source}: line {entry.line}: {column} `{value}` is also on line "
                    f"{first.line} (`{getattr(first, column)}`), and an LMS takes them for "
                    "one person; give each student their own")


def read_roster(path: Path) -> Roster:
    """The roster file at `path`; RosterError for anything that keeps it from being used."""
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise RosterError(f"{path}: cannot read the roster ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise RosterError(f"{path}: not UTF-8 text (byte {exc.start}); save it as "
                          "\"CSV UTF-8\"") from exc
    return parse_roster(text, source=str(path))
