"""Reading a submission: a .py file, a folder holding the lab's file, or a notebook.

Notebooks are read as data (their code cells joined), never executed here; IPython magics and
shell escapes are commented out so the file stays valid Python.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


class SubmissionError(ValueError):
    """The path cannot be graded (missing, unreadable, wrong type): a usage error."""


@dataclass(frozen=True)
class Submission:
    path: Path
    source: str
    # The student's own folder, importable by the submission (helper modules beside it);
    # None where the folder holds other students' files (a flat class folder).
    search_path: Path | None = None


def notebook_source(path: Path) -> str:
    import nbformat

    try:
        notebook = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    except (json.JSONDecodeError, nbformat.reader.NotJSONError, UnicodeDecodeError) as exc:
        raise SubmissionError(f"{path}: not a readable notebook ({exc})") from exc
    cells = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        lines = [f"# {line}" if line.lstrip().startswith(("%", "!")) else line
                 for line in cell.source.splitlines()]
        cells.append("\n".join(lines))
    return "\n\n".join(cells) + "\n"


def load_submission(path: Path, *, filename: str, own_folder: bool = True) -> Submission:
    """The submission's source; `filename` is the lab's file to look for inside a folder.

    With `own_folder`, the file's folder belongs to this student alone and is importable.
    """
    if not path.exists():
        raise SubmissionError(f"{path}: no such file or folder")
    if path.is_dir():
        candidates = [path / filename, path / filename.replace(".py", ".ipynb")]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            raise SubmissionError(f"{path}: no {filename} (or notebook) in this folder")
        path = found
    search_path = path.parent.resolve() if own_folder else None
    if path.suffix == ".ipynb":
        return Submission(path, notebook_source(path), search_path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SubmissionError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from exc
    return Submission(path, source, search_path)


def find_upload(folder: Path, filename: str) -> Path:
    """The student's file in an upload folder (Gradescope, a repository checkout): the lab's
    file or notebook, else the only .py or .ipynb there."""
    for candidate in (folder / filename, folder / filename.replace(".py", ".ipynb")):
        if candidate.is_file():
            return candidate
    uploaded = sorted(p for p in folder.glob("*") if p.suffix in (".py", ".ipynb")
                      and p.is_file() and not p.name.startswith("."))
    if len(uploaded) == 1:
        return uploaded[0]
    if not uploaded:
        raise SubmissionError(f"no {filename} in your submission: upload your {filename} "
                              "(or the notebook)")
    names = ", ".join(p.name for p in uploaded)
    raise SubmissionError(f"several files were uploaded ({names}) and none is named "
                          f"{filename}: upload only your {filename}")
