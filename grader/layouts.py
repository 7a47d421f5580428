"""Finding each student's submission in the folder layouts instructors actually have.

- a flat folder of files named by student: `alice.py`, `bob.ipynb`;
- a folder per student: `alice/optimizer.py`, `bob/optimizer.ipynb`;
- nbgrader's `submitted/<student>/<assignment>/<file>` (pass the course folder or `submitted/`).

Problems are per student (an empty folder, two candidate files, a symbolic link that leads out
of the submissions folder or nowhere): they become an error row in the gradebook, never a
crashed run. Nothing is read through a link that leaves the folder: a grader running as root
would otherwise show a root-only file's contents in the student's feedback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
    """Source files, and links named like them (judged by `outside`, never skipped)."""
    return sorted(p for p in folder.iterdir()
                  if (p.is_file() or p.is_symlink()) and p.suffix in SOURCE_SUFFIXES
                  and not p.name.startswith("."))


def outside(path: Path, root: Path) -> str:
    """Why `path` must not be read for a class under `root` ("" when it may): a link to
    nothing, or one that resolves outside the submissions folder."""
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return f"{path.name} is a symbolic link to nothing"
    if not target.is_relative_to(root.resolve()):
        return f"{path.name} is a symbolic link that leads outside the submissions folder"
    return ""


def _pick(folder: Path, filename: str) -> Path | str:
    """The lab's file in `folder` (or its only source file); otherwise an error message."""
    stem = filename.removesuffix(".py")
    for name in (filename, f"{stem}.ipynb"):
        if (folder / name).is_file() or (folder / name).is_symlink():
            return folder / name
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


def discover(root: Path, *, filename: str) -> list[Found]:
    """Every student under `root`, sorted by name."""
    if (root / "submitted").is_dir():
        root = root / "submitted"  # an nbgrader course folder
    found: dict[str, list[Found]] = {}
    for path in _candidates(root):
        found.setdefault(path.stem, []).append(Found(path.stem, path))
    for folder in _subfolders(root):
        if problem := outside(folder, root):
            found.setdefault(folder.name, []).append(Found(folder.name, None, problem))
            continue
        picked = _in_student_folder(folder, filename)
        found.setdefault(folder.name, []).append(
            Found(folder.name, picked, own_folder=True) if isinstance(picked, Path)
            else Found(folder.name, None, picked))
    result = []
    for student, entries in sorted(found.items()):
        if len(entries) == 1:
            entry = entries[0]
            problem = outside(entry.path, root) if entry.path else ""
            result.append(Found(student, None, problem) if problem else entry)
        else:
            names = ", ".join(e.path.name if e.path else f"{student}/" for e in entries)
            result.append(Found(student, None, f"several submissions for {student}: {names}"))
    return result
