"""Finding each student's submission in the folder layouts instructors actually have.

- a flat folder of files named by student: `alice.py`, `bob.ipynb`;
- a folder per student: `alice/optimizer.py`, `bob/optimizer.ipynb`;
- nbgrader's `submitted/<student>/<assignment>/<file>` (pass the course folder or `submitted/`).

A student is the name as found (student_files.py says how names become file names and which
names are refused together). Problems are per student (an empty folder, two candidate files, a
folder that cannot be listed, a symbolic link that leads out of the student's own folder, to a
classmate's submission, or nowhere): they become an error row in the gradebook, never a crashed
run. Nothing is read through a link that leaves the student's own folder: a grader running as
root would otherwise show a root-only file's contents in the student's feedback, and a link to
a classmate's file would earn that classmate's marks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from grader.student_files import (
    NO_CLASSMATES,
    Classmates,
    display_name,
    folder_problem,
    is_text,
    link_problem,
    one_line,
    same_person,
)

SOURCE_SUFFIXES = (".py", ".ipynb")
IGNORED = {"__pycache__", ".ipynb_checkpoints", ".git"}


@dataclass(frozen=True)
class Found:
    """One student's submission, or why none could be chosen."""

    student: str
    path: Path | None
    error: str = ""
    own_folder: bool = False  # the file's folder holds only this student's files


def _candidates(folder: Path) -> list[Path]:
    """Entries named like source files (`.py`, `.PY`), whatever they are (a link, a FIFO:
    the reader refuses what it cannot read, with a row; nothing is skipped unseen)."""
    return sorted(p for p in folder.iterdir()
                  if p.suffix.lower() in SOURCE_SUFFIXES and not p.name.startswith(".")
                  and (p.is_symlink() or not p.is_dir()))


def outside(path: Path, root: Path, *, classmates: Classmates = NO_CLASSMATES) -> str:
    """Why `path`, an entry of the class folder `root`, must not be read for its student
    ("" when it may): a link to nothing, to another student's entry, or out of the class."""
    return link_problem(path, within=root, where="the submissions folder",
                        classmates=classmates)


def _pick(folder: Path, filename: str) -> Path | str:
    """The lab's file in `folder` (or its only source file); otherwise an error message."""
    stem = filename.removesuffix(".py")
    named = [folder / name for name in (filename, f"{stem}.ipynb")
             if (folder / name).exists() or (folder / name).is_symlink()]
    if len(named) == 2:  # as two flat files for one student are
        return (f"both {filename} and {stem}.ipynb in {folder.name}/: keep the one to be "
                "graded")
    if named:
        return named[0]
    files = _candidates(folder)
    if len(files) == 1:
        return files[0]
    if not files:
        return f"no {filename} (or notebook) in {folder.name}/"
    return f"several files in {folder.name}/ and none named {filename}: " + ", ".join(
        f.name for f in files)


def _subfolders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir()
                  if (p.is_dir() or (p.is_symlink() and not p.suffix))
                  and p.name not in IGNORED and not p.name.startswith("."))


def _in_student_folder(folder: Path, filename: str) -> Path | str:
    """A student's folder: the file directly inside, or inside one assignment folder (nbgrader)."""
    direct = _pick(folder, filename)
    if isinstance(direct, Path):
        return direct
    nested = [p for p in (_pick(sub, filename) for sub in _subfolders(folder))
              if isinstance(p, Path)]
    if len(nested) == 1:
        return nested[0]
    if len(nested) > 1:
        return "several assignment folders hold a submission: " + ", ".join(
            str(p.relative_to(folder)) for p in nested)
    return direct


def _student_folder(folder: Path, root: Path, filename: str, classmates: Classmates
                    ) -> Found:
    """One student's folder: their file, or why none can be graded as theirs. Every link
    in it is judged, not only the file's: an assignment folder may be the link."""
    student = display_name(folder.name)
    if problem := outside(folder, root, classmates=classmates) or _not_text(folder.name):
        return Found(student, None, problem)
    if problem := folder_problem(folder, classmates=classmates, besides=folder):
        return Found(student, None, problem)
    try:
        picked = _in_student_folder(folder, filename)
    except OSError as exc:
        return Found(student, None, f"{student}/ cannot be read ({exc.strerror or exc})")
    if isinstance(picked, str):
        return Found(student, None, picked)
    return Found(student, picked, own_folder=True)


def _not_text(name: str) -> str:
    """What to say of a name that is not UTF-8 (no report, gradebook or LMS can hold it)."""
    return "" if is_text(name) else (f"the name {display_name(name)} is not UTF-8 text, "
                                     "which no gradebook or LMS can hold: rename it")


def _flat_file(path: Path, root: Path, classmates: Classmates) -> Found:
    student = display_name(path.stem)
    problem = outside(path, root, classmates=classmates) or _not_text(path.name)
    return Found(student, None, problem) if problem else Found(student, path)


def discover(root: Path, *, filename: str) -> list[Found]:
    """Every student under `root`, sorted by name."""
    if (root / "submitted").is_dir():
        root = root / "submitted"  # an nbgrader course folder
    files, folders = _candidates(root), _subfolders(root)
    classmates = Classmates(files + folders)
    found: dict[str, list[Found]] = {}
    for entry in [*(_flat_file(path, root, classmates) for path in files),
                  *(_student_folder(folder, root, filename, classmates) for folder in folders)]:
        found.setdefault(entry.student, []).append(entry)
    twins = same_person(found)
    result = []
    for student, entries in sorted(found.items()):
        if student in twins:
            names = " and ".join(f"`{name}`" for name in sorted([student, *twins[student]]))
            result.append(Found(student, None, f"{names} differ only in case or in how "
                                "accents are encoded, so an LMS would take them for one "
                                "student: neither is graded; rename one"))
        elif len(entries) == 1:
            result.append(entries[0])
        else:
            names = ", ".join(e.path.name if e.path else f"{student}/" for e in entries)
            result.append(Found(student, None, f"several submissions for {student}: {names}"))
    return [replace(entry, error=one_line(entry.error)) if entry.error else entry
            for entry in result]
