"""A student's files as data: who a student is, and what of their folder may be read.

Everything a student hands in is bytes and names chosen by the student (or by an LMS export):
- a student is the name as found, never a folded form; the files written for a student are
  named by an injective function of that name (`file_stem`), so no two students share one;
- names that most likely mean one person (equal under Unicode's canonical caseless matching:
  `José` in NFC and in NFD, `Alice` and `alice`) are told apart only by bytes an LMS import
  would not keep (Canvas compares login ids without case, Moodle lowercases usernames): they
  are refused together, each naming the other, never merged (`same_person`);
- a link is followed only where it stays inside the student's own folder (a link to a
  classmate's file, or to a file only the grader may read, is refused with a reason);
- a file is read only if it is a regular file, without following a link at the last step,
  and never past a limit (a FIFO, a device or a huge file stops nothing).
Nothing here imports torch.
"""

from __future__ import annotations

import hashlib
import os
import stat
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

# Bytes of a name a student's file stem keeps as they are. A capital letter is written `^`
# and the letter (`Alice` -> `^alice`), and every other byte of the name's UTF-8 (for a name
# that is not UTF-8, its raw bytes) `%XX`, `%` and `^` included: stems differ for different
# names even where the file system ignores case.
_KEPT = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789-_.@")
# Longer stems end in the name's full SHA-256 instead (a file name holds 255 bytes); `~` is
# never kept, so such a stem can be no other name's.
_LONGEST_STEM = 160
# Entries walked in one student's folder before it is refused as too large to be a lab.
FOLDER_ENTRIES_LIMIT = 20_000
# Bytes of a student's folder read into its digest; past it, files count by size and time.
DIGEST_BYTES_LIMIT = 64 * 1024**2
VERSION_CONTROL = frozenset({".git", ".hg", ".svn"})


MESSAGE_CHARS = 300  # a message about a student's files: one line, at most this long


def one_line(text: str) -> str:
    """`text` as one printable line of at most MESSAGE_CHARS: names in it are the student's
    (a file name may hold a newline, or bytes that are not UTF-8)."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:MESSAGE_CHARS * 2])
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS - 1] + "…"


def is_text(raw: str) -> bool:
    """Whether a name from the file system is UTF-8 text (Python keeps other bytes as lone
    surrogates, which no report, CSV or JSON file can hold)."""
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def display_name(raw: str) -> str:
    """A name from the file system as text that can be written anywhere: a name that is not
    UTF-8 shows each such byte as `\\xNN` (such a student is refused, with a row)."""
    if is_text(raw):
        return raw
    return raw.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def file_stem(student: str) -> str:
    """The stem of every file written for `student`: different for different names (as bytes,
    and as a file system that ignores case compares them), and never a path or a hidden file."""
    data = student.encode("utf-8", "surrogateescape")
    stem = "".join(chr(byte) if byte in _KEPT else
                   f"^{chr(byte).lower()}" if 0x41 <= byte <= 0x5A else f"%{byte:02X}"
                   for byte in data)
    if stem.startswith("."):
        stem = "%2E" + stem[1:]  # never a hidden file, never `.` or `..`
    stem = stem or "%"
    if len(stem) > _LONGEST_STEM:
        stem = stem[:_LONGEST_STEM - 65] + "~" + hashlib.sha256(data).hexdigest()
    return stem


def caseless(name: str) -> str:
    """Unicode's canonical caseless key: equal for names that differ only in case or in
    composed against decomposed accents."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())


def same_person(names: Iterable[str]) -> dict[str, list[str]]:
    """Each name that shares its caseless key with another name, mapped to those others."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(caseless(name), []).append(name)
    return {name: [other for other in group if other != name]
            for group in groups.values() if len(group) > 1 for name in group}


class Classmates:
    """The class's entries (files and folders named by student), indexed once per class so
    that a link is told apart from a classmate's in the depth of its target, not the size
    of the class."""

    def __init__(self, entries: Iterable[Path]) -> None:
        self._by_place = {entry.parent.resolve() / entry.name: entry for entry in entries}

    def reached(self, target: Path, *, besides: Path, holding: bool = True) -> Path | None:
        """The entry (not `besides`) that `target` is, lies in, or (with `holding`) holds."""
        for place in (target, *target.parents):
            entry = self._by_place.get(place)
            if entry is not None and entry != besides:
                return entry
        if holding and target.is_dir():  # a folder that holds a classmate: `zed -> .`
            for place, entry in self._by_place.items():
                if entry != besides and place.is_relative_to(target):
                    return entry
        return None


NO_CLASSMATES = Classmates(())


def link_problem(path: Path, *, within: Path, where: str = "the student's folder",
                 classmates: Classmates = NO_CLASSMATES, besides: Path | None = None) -> str:
    """Why the link at `path` must not be followed ("" where `path` is no link, or leads to
    a place inside `within`, described as `where`, that is no classmate's): a link to
    nothing, to another student's entry (one of `classmates` but `besides`, the student's
    own), or out of `within`."""
    if not path.is_symlink():
        return ""
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return f"{path.name} is a symbolic link to nothing"
    inside = target.is_relative_to(within.resolve())
    if other := classmates.reached(target, besides=besides or path, holding=inside):
        return f"{path.name} is a symbolic link to {other.name}, another student's submission"
    return "" if inside else f"{path.name} is a symbolic link that leads outside {where}"


def walk(folder: Path) -> Iterator[Path]:
    """Every entry under `folder`, links listed but never entered, a version-control folder
    listed but not entered (the grader reads nothing there, and a checkout's objects would
    count against the limit); OSError where a folder cannot be listed, ValueError past
    FOLDER_ENTRIES_LIMIT entries."""
    count = 0
    stack = [folder]
    while stack:
        current = stack.pop()
        with os.scandir(current) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                count += 1
                if count > FOLDER_ENTRIES_LIMIT:
                    raise ValueError(f"more than {FOLDER_ENTRIES_LIMIT} files")
                path = Path(entry.path)
                yield path
                if entry.is_dir(follow_symlinks=False) and entry.name not in VERSION_CONTROL:
                    stack.append(path)


def folder_problem(folder: Path, *, classmates: Classmates = NO_CLASSMATES,
                   besides: Path | None = None) -> str:
    """Why a student's own folder cannot be graded as theirs: a link in it that leads out
    (the submission could import or open it, or be another's), a folder that cannot be
    listed, or one far too large. "" where it can. `besides`: the student's own entry."""
    try:
        for path in walk(folder):
            if problem := link_problem(path, within=folder, classmates=classmates,
                                       besides=besides):
                where = path.parent.relative_to(folder).as_posix()
                return one_line(problem if where == "." else f"{where}/{problem}")
    except ValueError as exc:
        return one_line(f"{folder.name}/ holds {exc}: not a lab submission")
    except OSError as exc:
        return one_line(f"{folder.name}/ cannot be read ({exc.strerror or exc})")
    return ""


def folder_digest(folder: Path) -> str:
    """A hash of everything under a student's folder the submission could import or open:
    each Python file's path and bytes, then other regular files' (past DIGEST_BYTES_LIMIT
    in all, their size and modification time), each link's path and target. Raises
    OSError, ValueError as walk."""
    digest = hashlib.sha256()
    budget = DIGEST_BYTES_LIMIT
    entries = sorted(((path, path.lstat()) for path in walk(folder)),
                     key=lambda item: (item[0].suffix != ".py", str(item[0])))
    for path, info in entries:
        name = path.relative_to(folder).as_posix().encode("utf-8", "surrogateescape")
        digest.update(name + b"\0")
        if stat.S_ISLNK(info.st_mode):
            digest.update(b"link\0" + os.fsencode(os.readlink(path)) + b"\0")
        elif stat.S_ISREG(info.st_mode) and info.st_size <= budget:
            budget -= info.st_size
            digest.update(b"file\0" + read_bytes(path, limit=info.st_size) + b"\0")
        else:
            digest.update(f"{stat.S_IFMT(info.st_mode)}:{info.st_size}:{info.st_mtime_ns}\0"
                          .encode())
    return digest.hexdigest()


class NotAFileError(OSError):
    """The path is not a regular file (a FIFO, a device, a folder, a link at the last step)."""


def read_bytes(path: Path, *, limit: int) -> bytes:
    """The bytes of the regular file at `path`, opened without following a link at the last
    step and without blocking; OSError (NotAFileError for anything but a regular file),
    ValueError where it holds more than `limit` bytes."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if path.is_symlink():
            raise NotAFileError(f"{path.name} is a symbolic link") from exc
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotAFileError(f"{path.name} is not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path.name} holds more than {limit} bytes")
    return data
