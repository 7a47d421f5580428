"""Reading a submission: a .py file, a folder holding the lab's file, or a notebook.

Notebooks are read as data (their code cells joined), never executed here, and as Jupyter runs
them: see NOTE: [cells as IPython runs them]. The grader's own cells (nbgrader autograder test
cells, cells that call `grader.notebook.grade_function`) are left out, so grading a notebook
never runs `grade_function` inside the sandboxed submission. Any bytes in the file give a
source or a one-line `SubmissionError` naming the file and what is wrong, never another
exception: the notebook's JSON is checked here for what the grader reads (nbformat's own
reader raises whatever odd input makes it raise).
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from grader import feedback
from grader.errors import UsageError
from grader.notebook_cells import is_autograder_test, is_grader_cell
from grader.student_files import NotAFileError, one_line, read_bytes


class SubmissionError(UsageError):
    """The path cannot be graded (missing, unreadable, wrong type): a usage error."""


# Checked before anything is parsed: a syntax tree costs a few hundred bytes a node
# (docs/sandbox.md#numbers-behind-the-code), and an honest lab file is a few kilobytes.
SOURCE_LIMIT = 1024**2  # bytes of Python source, from a .py file or a notebook's code cells
NOTEBOOK_LIMIT = 10 * 1024**2  # bytes of .ipynb (outputs and images included)


def _error(path: Path, why: str) -> SubmissionError:
    return SubmissionError(one_line(f"{path.name}: {why}"))


def _too_large(path: Path, size: int, limit: int, what: str) -> SubmissionError:
    return SubmissionError(one_line(
        f"{path.name} is {size / 1024**2:.1f} MiB of {what}; the grader reads at most "
        f"{limit // 1024**2} MiB (is a data file included?)"))


def _read_bytes(path: Path, limit: int, what: str) -> bytes:
    """The file's bytes (student_files.read_bytes: a regular file only, never past `limit`);
    a link is followed here only as far as the layouts allowed it."""
    try:
        return read_bytes(path.resolve(), limit=limit)
    except NotAFileError:
        raise _error(path, "cannot read it: not a regular file") from None
    except ValueError:
        raise _too_large(path, path.stat().st_size, limit, what) from None
    except OSError as exc:
        raise _error(path, f"cannot read it ({exc.strerror or exc.__class__.__name__})") from exc


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
    grader's own cells left out), and where each cell went. Raises SubmissionError, and only
    that, for a file that is not a notebook whose code the grader can read."""
    numbered = []
    code = 0
    for number, raw in _code_cells(path, _notebook_json(path)):
        if code + len(raw) > SOURCE_LIMIT:  # a character is a byte or more: no need to encode
            raise _too_large(path, code + len(raw), SOURCE_LIMIT, "code cells")
        text = code_cell_source(raw)
        try:
            code += len(text.encode("utf-8")) + 2  # and the blank line after it
        except UnicodeEncodeError as exc:  # JSON's "\ud800": an unpaired surrogate
            raise _unreadable(path, f"cell {number} holds a character that is not Unicode "
                                    "text (an unpaired surrogate)") from exc
        if code > SOURCE_LIMIT:
            raise _too_large(path, code, SOURCE_LIMIT, "code cells")
        if "\0" in text:
            line = text.count("\n", 0, text.index("\0")) + 1
            raise _unreadable(path, f"cell {number}, line {line} holds a NUL character, "
                                    "which Python cannot run")
        numbered.append((number, text))
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


def _unreadable(path: Path, why: str) -> SubmissionError:
    return _error(path, f"not a readable notebook: {why}")


def _json_int(text: str) -> int | float:
    # Python refuses to convert over 4,300 digits (ValueError); no count the grader reads is long.
    return int(text) if len(text) <= 100 else float("inf")


def _notebook_json(path: Path) -> object:
    """The notebook file as a JSON value (any value: its shape is _code_cells' to check)."""
    data = _read_bytes(path, NOTEBOOK_LIMIT, "notebook")
    try:
        text = data.decode("utf-8-sig")  # Jupyter writes UTF-8; a BOM some editors add is fine
    except UnicodeDecodeError as exc:
        read = bytes(exc.object)  # after the BOM
        line = read[:exc.start].count(b"\n") + 1
        raise _unreadable(path, f"it is not UTF-8 text (byte 0x{read[exc.start]:02x} on line "
                                f"{line})") from exc
    try:
        return json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise _unreadable(path, f"it is not JSON ({exc.msg} at line {exc.lineno}, column "
                                f"{exc.colno})") from exc
    except RecursionError as exc:
        raise _unreadable(path, "its JSON is nested too deeply") from exc
    except MemoryError as exc:
        raise _unreadable(path, "its JSON takes too much memory to read") from exc
    except ValueError as exc:  # what else the decoder refuses
        raise _unreadable(path, f"it is not JSON ({exc})") from exc


def _kind(value: object) -> str:
    kinds = {dict: "an object", list: "a list", str: "text", bool: "true or false",
             type(None): "null"}
    return kinds.get(type(value), "a number")


def _code_cells(path: Path, notebook: object) -> list[tuple[int, str]]:
    """(number, source) of the notebook's code cells that are the student's, numbered among all
    its cells from 1. Checked as far as the grader reads and no further, and as leniently as
    Jupyter opens a notebook: a cell without metadata or source, an nbformat 4 minor version
    this grader does not know, a cell type it does not know (not code, so not read) are fine;
    what cannot be code is a SubmissionError. nbformat 2 and 3 keep cells in worksheets."""
    if not isinstance(notebook, dict):
        raise _unreadable(path, f"it is {_kind(notebook)}, not a JSON object")
    version = notebook.get("nbformat", 4)
    if version == 4 and not isinstance(version, bool):
        cells, key = notebook.get("cells"), "source"
        if not isinstance(cells, list):
            raise _unreadable(path, "it has no list of cells")
    elif version in (2, 3) and not isinstance(version, bool):
        sheets, key, cells = notebook.get("worksheets"), "input", []
        if not isinstance(sheets, list):
            raise _unreadable(path, f"it is nbformat {version} without a list of worksheets")
        for index, sheet in enumerate(sheets, start=1):
            if not isinstance(sheet, dict) or not isinstance(sheet.get("cells"), list):
                raise _unreadable(path, f"worksheet {index} has no list of cells")
            cells.extend(sheet["cells"])
    else:
        shown = repr(version)[:20] if isinstance(version, (int, float, str)) else _kind(version)
        raise _unreadable(path, f"its nbformat is {shown}; the grader reads nbformat 4 (and "
                                "3): open it in Jupyter and save it again")
    code = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            raise _unreadable(path, f"cell {number} is {_kind(cell)}, not a JSON object")
        cell_type = cell.get("cell_type")
        if not isinstance(cell_type, str):
            raise _unreadable(path, f"cell {number} has no cell_type" if cell_type is None
                              else f"cell {number}'s cell_type is not text")
        if cell_type != "code" or is_autograder_test(cell):
            continue
        source = cell.get(key, "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise _unreadable(path, f"cell {number}'s source is not text")
        code.append((number, source))
    return code


# NOTE: [cells as IPython runs them]
# A code cell is graded as the Python IPython would run in the kernel's namespace
# (IPython.core.inputtransformer2, the cell magics in IPython.core.magics), one line for one
# line so that a line of the joined module maps back to its cell and line:
# - IPython's clean-up first: leading blank lines are skipped, and the first line's indentation
#   is taken off every line that starts with it.
# - A first line `%%name args` is a cell magic. Only these run their body as Python in the
#   user's namespace, so only their body is read (itself as a cell, magics and all):
#   `%%time` (execution.py `time`: exec in user_ns; with a statement after it, a UsageError that
#   runs nothing), `%%prun` (`_run_with_profiler`: runctx in user_ns), `%%capture` (run_cell of
#   the body) and `%%debug` (pdb's run in user_ns, once the student continues). `%%timeit`
#   runs its body inside a function it builds, so what the body defines is that function's
#   locals and never reaches the namespace: it is left out, as are `%%bash`, `%%script ...`,
#   `%%writefile`, `%%html` and every other cell magic, an unknown one included (a UsageError).
# - An IPython escape at the start of a logical line (not inside a string or brackets; a
#   backslash continues it): `%line magic`, `!shell`, `?help`, the autocall forms `/f x`,
#   `,f x`, `;f x`, `obj?` help, and the assignments `x = !cmd`, `x = %magic ...` are commented
#   out, `pass` kept where the line is indented (a block's only statement). What they would
#   have assigned is not defined.
PYTHON_CELL_MAGICS = frozenset({"time", "prun", "capture", "debug"})
_NESTED_MAGICS = 32  # `%%time` in `%%capture` ...: deeper, IPython's recursion fails anyway
_ESCAPES = ("%", "!", "?", "/", ",", ";")  # inputtransformer2's ESCAPE_SINGLES
_HELP_END = re.compile(r"%{0,2}(?!\d)[\w*]+(?:\.(?!\d)[\w*]+|\[-?[0-9]+\])*\?\??")
_OUTSIDE_STRING = re.compile(r"""'''|\"\"\"|['"#\\()\[\]{}]|[<>!=:+\-*/%&|^@]*=+""")
_STRING_END = {quote: re.compile(r"\\.?|" + re.escape(quote))
               for quote in ("'", '"', "'''", '"""')}
_INDENT = re.compile(r"[ \t]+")


def code_cell_source(source: str) -> str:
    """A code cell as the Python IPython runs: see NOTE: [cells as IPython runs them]. The
    result has as many lines as the cell (newlines as Python counts them: \\n, \\r\\n, \\r)."""
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()  # as str.splitlines: a final newline ends the last line
    return "\n".join(_cell_lines(lines))


def _cell_lines(lines: list[str]) -> list[str]:
    done: list[str] = []
    for _ in range(_NESTED_MAGICS):
        first = next((index for index, line in enumerate(lines) if line.strip()), len(lines))
        done += lines[:first]
        lines = _dedented(lines[first:])
        if not lines or not lines[0].startswith("%%"):
            return done + _escapes_left_out(lines)
        name, _, args = lines[0][2:].rstrip().partition(" ")
        if name not in PYTHON_CELL_MAGICS or (name == "time" and args.strip()):
            break
        done.append(_commented(lines[0]))
        lines = lines[1:]  # the body: a cell of its own
    return done + [_commented(line) for line in lines]


def _dedented(lines: list[str]) -> list[str]:
    indent = _INDENT.match(lines[0]) if lines else None
    if indent is None:
        return lines
    space = indent[0]
    return [line[len(space):] if line.startswith(space) else line for line in lines]


def _commented(line: str) -> str:
    return "# " + line.replace("\0", "\\0")  # not Python: a NUL there is no error of the cell


def _escapes_left_out(lines: list[str]) -> list[str]:
    out = []
    quote, depth, continued, escaped = "", 0, False, False
    for line in lines:
        if escaped:  # a backslash continued the escape onto this line
            out.append(_commented(line))
            escaped = line.endswith("\\")
            continue
        starts = not (quote or depth or continued)
        body = line.lstrip(" \t\f")
        if starts and _is_escape(body):
            indent = line[:len(line) - len(body)]
            out.append(f"{indent}pass  {_commented(body)}" if indent else _commented(line))
            escaped = line.endswith("\\")
            continue
        out.append(line)
        quote, depth, continued, _ = _advance(line, quote, depth)
    return out


def _is_escape(body: str) -> bool:
    """A logical line (without its indentation) that IPython rewrites."""
    if body.startswith(_ESCAPES) or _HELP_END.fullmatch(body.rstrip()):
        return True
    if "=" not in body or not ("!" in body or "%" in body):
        return False
    *_, assign = _advance(body, "", 0)
    value = body[assign + 1:].lstrip(" \t") if assign >= 0 else ""
    return value.startswith("!") or (value.startswith("%") and value[1:2].isidentifier())


def _advance(line: str, quote: str, depth: int) -> tuple[str, int, bool, int]:
    """After `line`: the open string's quote ("" outside one), the open brackets, whether a
    backslash continues the line, and where the line's first `=` outside brackets and strings
    is (-1: none). Python's tokens as far as those need them; never raises."""
    pos, assign = 0, -1
    while True:
        if quote:
            for match in _STRING_END[quote].finditer(line, pos):
                if match[0] == quote:
                    quote, pos = "", match.end()
                    break
                if match[0] == "\\":  # at the end of the line: the string goes on
                    return quote, depth, True, assign
            else:  # a triple-quoted string goes on; a single-quoted one is an error: ended
                return (quote if len(quote) == 3 else ""), depth, False, assign
            continue
        found = _OUTSIDE_STRING.search(line, pos)
        if found is None or found[0] == "#":
            return "", depth, False, assign
        token, pos = found[0], found.end()
        if token == "\\":
            return "", depth, pos == len(line), assign
        if token in "([{":
            depth += 1
        elif token in ")]}":
            depth = max(depth - 1, 0)
        elif token[0] in "'\"":
            quote = token
        elif token == "=" and depth == 0 and assign < 0:
            assign = found.start()


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
        candidates = [c for c in (path / filename, path / filename.replace(".py", ".ipynb"))
                      if c.is_file()]
        if not candidates:
            raise SubmissionError(f"{path}: no {filename} (or notebook) in this folder")
        if len(candidates) == 2:
            raise SubmissionError(f"{path}: both {candidates[0].name} and "
                                  f"{candidates[1].name}; keep the one to be graded")
        path = candidates[0]
    search_path = path.parent.resolve() if own_folder else None
    if path.suffix == ".ipynb":
        source, cells = notebook_cells(path)
        return Submission(path, source, search_path, cells)
    return Submission(path, python_source(path), search_path)


def python_source(path: Path) -> str:
    """A .py file's text as Python reads it: UTF-8, or what a PEP 263 `# coding:` line names,
    a UTF-8 BOM dropped. The grader runs it as that text (the child compiles the text as UTF-8,
    where a coding line means nothing), so the scans and the import read the same code.
    Bytes Python would not run are a one-line SubmissionError."""
    data = _read_bytes(path, SOURCE_LIMIT, "Python")
    declared: SyntaxError | None = None
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # an unknown encoding, one a BOM contradicts, or not UTF-8
        encoding, declared = "utf-8", exc
    try:
        text = data.decode(encoding)
        text.encode("utf-8")  # a codec that decodes to unpaired surrogates (utf-7 can)
    except UnicodeDecodeError as exc:
        read = bytes(exc.object)  # after a BOM
        line = read[:exc.start].count(b"\n") + 1
        utf16 = " (it looks like UTF-16)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        shown = "UTF-8" if encoding.startswith("utf-8") else encoding
        raise _error(path, f"cannot read it as Python: not {shown} text{utf16} (byte "
                           f"0x{read[exc.start]:02x} on line {line}); save it as UTF-8") from exc
    except (UnicodeError, LookupError) as exc:  # not text, or a codec that is not a text one
        raise _error(path, f"cannot read it as Python: {exc.__class__.__name__}: {exc}") from exc
    if declared is not None:
        raise _error(path, f"cannot read it as Python: {declared.msg}") from declared
    if "\0" in text:
        line = text.count("\n", 0, text.index("\0")) + 1
        raise _error(path, f"cannot read it as Python: line {line} holds a NUL byte, which "
                           "Python cannot run (is it a binary file?)")
    return text


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
