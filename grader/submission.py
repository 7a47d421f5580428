"""Reading a submission: a .py file, a folder holding the lab's file, or a notebook.

Notebooks are read as data (their code cells joined), never executed here; IPython magics and
shell escapes are commented out so the file stays valid Python. The grader's own cells (nbgrader
autograder test cells, cells that call `grader.notebook.grade_function`) are left out, so
grading a notebook never runs `grade_function` inside the sandboxed submission.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from grader import feedback
from grader.errors import UsageError
from grader.platforms.nbgrader.cells import is_autograder_test, is_grader_cell


class SubmissionError(UsageError):
    """The path cannot be graded (missing, unreadable, wrong type): a usage error."""


# Checked before anything is parsed: a syntax tree costs a few hundred bytes a node (a megabyte
# of `x = 1` lines is over 400 MB of them), and an honest lab file is a few kilobytes.
SOURCE_LIMIT = 1024**2  # bytes of Python source, from a .py file or a notebook's code cells
NOTEBOOK_LIMIT = 10 * 1024**2  # bytes of .ipynb (outputs and images included)


def _too_large(path: Path, size: int, limit: int, what: str) -> SubmissionError:
    return SubmissionError(f"{path.name} is {size / 1024**2:.1f} MiB of {what}; the grader "
                           f"reads at most {limit // 1024**2} MiB (is a data file included?)")


@dataclass(frozen=True)
class CellSpan:
    """Where one notebook cell's code sits in the joined module: its lines start at
    `first_line` (1-based) and it is cell `cell` of the notebook (1 = its first cell,
    markdown cells counted, as a student counts them scrolling down)."""

    first_line: int
    cell: int
    lines: int


@dataclass(frozen=True)
class Submission:
    path: Path
    source: str
    # The student's own folder, importable by the submission (helper modules beside it);
    # None where the folder holds other students' files (a flat class folder).
    search_path: Path | None = None
    # A notebook's code cells in `source` (empty for a .py file, or where joining moved
    # lines: then a line number is the joined module's).
    cells: tuple[CellSpan, ...] = ()

    def cell_of(self, line: int) -> tuple[int, int] | None:
        """(cell, line within that cell) of a line of `source`; None for a .py file."""
        for span in self.cells:
            if span.first_line <= line < span.first_line + span.lines:
                return span.cell, line - span.first_line + 1
        return None


def notebook_source(path: Path) -> str:
    return notebook_cells(path)[0]


def notebook_cells(path: Path) -> tuple[str, tuple[CellSpan, ...]]:
    """A notebook's code cells joined into one module (the autograder's test cells and the
    grader's own cells left out), and where each cell went."""
    import nbformat

    size = path.stat().st_size
    if size > NOTEBOOK_LIMIT:
        raise _too_large(path, size, NOTEBOOK_LIMIT, "notebook")
    try:
        notebook = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    except (json.JSONDecodeError, nbformat.reader.NotJSONError, UnicodeDecodeError) as exc:
        raise SubmissionError(f"{path}: not a readable notebook ({exc})") from exc
    numbered = [(number, code_cell_source(cell.source))
                for number, cell in enumerate(notebook.cells, start=1)
                if cell.cell_type == "code" and not is_autograder_test(cell)]
    code = sum(len(text.encode()) for _, text in numbered)
    if code > SOURCE_LIMIT:
        raise _too_large(path, code, SOURCE_LIMIT, "code cells")
    kept = [(number, text) for number, text in numbered if not is_grader_cell(text)]
    source = join_cells(text for _, text in kept)
    spans, line = [], 1
    for number, text in kept:
        lines = text.count("\n") + 1
        spans.append(CellSpan(first_line=line, cell=number, lines=lines))
        line += lines + 1  # the blank line join_cells puts between cells
    if source != "\n\n".join(text for _, text in kept) + "\n":
        return source, ()  # a __future__ import moved to the top: lines no longer map
    return source, tuple(spans)


def code_cell_source(source: str) -> str:
    """A code cell as Python: IPython magics and shell escapes commented out."""
    return "\n".join(f"# {line}" if line.lstrip().startswith(("%", "!")) else line
                     for line in source.splitlines())


def join_cells(cells: Iterable[str]) -> str:
    """Cells as one module, in order. IPython accepts `from __future__` in any cell; a module
    only at its top, so those imports move there when code comes before them."""
    source = "\n\n".join(cells) + "\n"
    if "__future__" not in source:
        return source
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source  # the syntax error is reported as the submission's
    futures = [node for node in body
               if isinstance(node, ast.ImportFrom) and node.module == "__future__"]
    allowed = len(futures) + (1 if body and _is_docstring(body[0]) else 0)
    if all(index < allowed for index, node in enumerate(body) if node in futures):
        return source
    lines = source.splitlines(keepends=True)
    moved = ["".join(lines[node.lineno - 1:node.end_lineno]) for node in futures]
    for node in reversed(futures):
        del lines[node.lineno - 1:node.end_lineno]
    return "".join(dict.fromkeys(moved)) + "".join(lines)


def _is_docstring(node: ast.stmt) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


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
        source, cells = notebook_cells(path)
        return Submission(path, source, search_path, cells)
    try:
        if (size := path.stat().st_size) > SOURCE_LIMIT:
            raise _too_large(path, size, SOURCE_LIMIT, "Python")
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SubmissionError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from exc
    return Submission(path, source, search_path)


def find_upload(folder: Path, filename: str, *, lang: str = "en") -> Path:
    """The student's file in an upload folder (Gradescope, a repository checkout): the lab's
    file or notebook, else the only .py or .ipynb there. The errors are worded for the
    student who uploaded."""
    for candidate in (folder / filename, folder / filename.replace(".py", ".ipynb")):
        if candidate.is_file():
            return candidate
    uploaded = sorted(p for p in folder.glob("*") if p.suffix in (".py", ".ipynb")
                      and p.is_file() and not p.name.startswith("."))
    if len(uploaded) == 1:
        return uploaded[0]
    if not uploaded:
        raise SubmissionError(feedback.ui("upload_missing", lang, filename=filename))
    raise SubmissionError(feedback.ui("upload_several", lang, filename=filename,
                                      names=", ".join(p.name for p in uploaded)))
