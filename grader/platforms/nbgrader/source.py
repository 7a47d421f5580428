"""nbgrader: one source notebook per lab, generated from solutions/ (the single source).

The notebook holds, in the solution file's order: the module's docstring (a markdown cell), its
imports and any code students are given (locked cells), and for each lab function or class one
solution cell (its definition, `### BEGIN/END SOLUTION` kept for nbgrader to replace) followed by
one autograded test cell. A test cell calls `grader.notebook.grade_function` for that function:
it is worth the points the function can earn on the CPU, and its value is the points earned, so
nbgrader gives partial credit.

The hidden cases themselves never go into the notebook (See NOTE: [hidden cases outside the
notebook]). They are written to a file beside the assignment's folder, such as
`source/ps1.optimizer.hidden.toml`, and a test cell holds only a reference to that file between
`### BEGIN HIDDEN TESTS` and `### END HIDDEN TESTS`, which `nbgrader generate_assignment` strips
from the students' copy and `nbgrader autograde` restores from its gradebook.
"""

from __future__ import annotations

import ast
import json
import re
import secrets
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from grader import feedback
from grader.errors import UsageError
from grader.hidden import HiddenFile, grading_key, parse_hidden_text
from grader.labs import LAB_FILES, check_lab_name, get_lab
from grader.stubs import BEGIN, StubError, make_stub

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

if TYPE_CHECKING:
    from nbformat import NotebookNode

    from grader.labs.base import Lab

BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"
SCHEMA_VERSION = 3  # nbgrader's cell metadata schema
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


class SourceNotebookError(UsageError):
    """The notebook cannot be made (no solution file, a definition missing, a file in the way):
    one line, naming the file."""


class HiddenStoreError(UsageError):
    """The hidden cases a test cell refers to cannot be used: one line naming the file and
    what to run, and never a value of the cases (a kernel prints it where students read)."""


@dataclass(frozen=True)
class Segment:
    """A top-level piece of the solution file: lines [start, end) of it, comments included."""

    kind: str  # "docstring", "given" (imports, helpers students get) or "function" (graded)
    name: str  # the function or class defined ("" for statements that define none)
    start: int
    end: int


def split_definitions(source: str, *, functions: Sequence[str], name: str) -> list[Segment]:
    """The file's top-level statements, each with its decorators, the comments at column 0
    above it, and the indented comments that end its body (`### END SOLUTION`).

    A lab function or class is a "function" segment; the module docstring a "docstring"
    segment; everything else is "given". Blank lines around a segment are left out.
    """
    try:
        tree = ast.parse(source, filename=name)
    except SyntaxError as exc:
        raise SourceNotebookError(f"{name}:{exc.lineno}: not valid Python ({exc.msg})") from exc
    lines = source.splitlines(keepends=True)
    body = tree.body
    starts = [min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
              for node in body] + [len(lines)]
    segments: list[Segment] = []
    start = 0
    for index, node in enumerate(body):
        end = node.end_lineno or node.lineno
        for number in range(end, starts[index + 1]):
            if (lines[number].strip() and lines[number][0] in " \t") or index == len(body) - 1:
                end = number + 1
        first, last = start, end
        while first < last and not lines[first].strip():
            first += 1
        while last > first and not lines[last - 1].strip():
            last -= 1
        start = end
        defined = (node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                  ast.ClassDef)) else "")
        kind = ("docstring" if index == 0 and ast.get_docstring(tree) is not None
                else "function" if defined in functions else "given")
        segments.append(Segment(kind, defined, first, last))
    found = [s.name for s in segments if s.kind == "function"]
    for function in functions:
        if found.count(function) != 1:
            raise SourceNotebookError(f"{name}: expected one top-level definition of "
                                      f"{function}, found {found.count(function)}")
    return segments


def function_points(lab: Lab, hidden: HiddenFile | None) -> dict[str, float]:
    """What each lab function can earn on the CPU: its checks (per-device ones once), plus its
    hidden cases; the engine's own rubric logic (a mistake in `hidden` is a UsageError)."""
    from grader.engine import effective_rubric, hidden_plan, unit_points

    rubric = effective_rubric(lab, None)
    plan = hidden_plan(lab, hidden)
    return {function: round(unit_points(lab, function, rubric, plan, shared=True), 6)
            for function in lab.functions}


def hidden_for(hidden: HiddenFile, lab: Lab, function: str) -> HiddenFile | None:
    """The part of `hidden` about one function: its cases, and the `hide` patterns that match
    its checks; None when it has neither."""
    import fnmatch

    ids = [check.id for check in lab.checks_for(function)]
    hide = [pattern for pattern in hidden.hide if fnmatch.filter(ids, pattern)]
    cases = [case for case in hidden.cases if case.function == function]
    if not cases and not hide:
        return None
    return hidden.model_copy(update={"hide": hide, "cases": cases})


def _hidden_document(hidden: HiddenFile) -> dict[str, Any]:
    document: dict[str, Any] = {"lab": hidden.lab}
    if hidden.hide:
        document["hide"] = list(hidden.hide)
    if hidden.release:
        document["release"] = True
    if hidden.cases:
        fields = ("function", "like", "name", "weight", "set")
        document["case"] = [{key: value for key, value in
                             case.model_dump(exclude_defaults=True).items() if key in fields}
                            for case in hidden.cases]
    return document


def _toml(document: dict[str, Any], hidden: HiddenFile) -> str:
    import tomli_w

    try:
        return tomli_w.dumps(document)
    except TypeError as exc:  # a value TOML has no type for
        raise SourceNotebookError(f"{hidden.source}: cannot write its cases as TOML ({exc})"
                                  ) from exc


def hidden_toml(hidden: HiddenFile) -> str:
    """`hidden` written back as TOML that `parse_hidden_text` reads to the same file."""
    text = _toml(_hidden_document(hidden), hidden)
    again = parse_hidden_text(text, source="generated hidden tests")
    if again.model_dump() != hidden.model_dump():  # a value TOML cannot hold as written
        raise SourceNotebookError(f"{hidden.source}: cannot write its cases back as TOML")
    return text


# NOTE: [hidden cases outside the notebook]
# nbgrader's `generate_feedback` shows every test cell's source as autograde ran it, hidden-tests
# region restored, so whatever a test cell holds reaches the student; and `autograde` copies
# every other file of source/ASSIGNMENT beside each student's notebook (where the student's
# code can read it), as `generate_assignment` copies them into the release. So the cases live
# in a file beside the assignment's folder, which nbgrader neither releases nor copies, and a
# test cell's hidden region holds only `HIDDEN = "inplace-grader-hidden:<path>#<token>"`: the
# file's path from the course folder and a random token naming the version of the cases the
# cell's points were computed for (random, so it says nothing of the cases themselves).
HIDDEN_REF_PREFIX = "inplace-grader-hidden:"
STORE_SUFFIX = ".hidden.toml"
_TOKEN = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class HiddenRef:
    """What a test cell's hidden-tests region holds instead of the cases."""

    path: str  # the cases file, from the course folder: "source/ps1.optimizer.hidden.toml"
    token: str  # the version of the cases the test cells' points were computed for

    def __str__(self) -> str:
        return f"{HIDDEN_REF_PREFIX}{self.path}#{self.token}"

    @classmethod
    def parse(cls, text: str) -> HiddenRef | None:
        """The reference `text` holds; None for anything else (the TOML that test cells held
        before references). Raises HiddenStoreError for a malformed reference."""
        if not text.startswith(HIDDEN_REF_PREFIX):
            return None
        path, _, token = text[len(HIDDEN_REF_PREFIX):].rpartition("#")
        parts = PurePosixPath(path).parts
        if (not _TOKEN.fullmatch(token) or not parts or PurePosixPath(path).is_absolute()
                or ".." in parts or not path.endswith(STORE_SUFFIX)):
            raise HiddenStoreError("this test cell's reference to its hidden cases is "
                                   "malformed; run `inplace-grader nbgrader source` again")
        return cls(path, token)


def hidden_store_path(out: Path, notebook: str) -> Path:
    """Where `write_source_notebook` keeps the hidden cases of `out/<notebook>.ipynb`: beside
    the assignment's folder (`source/ps1.optimizer.hidden.toml`), never inside it."""
    out = out.absolute()
    return out.parent / f"{out.name}.{notebook}{STORE_SUFFIX}"


def _store_text(hidden: HiddenFile, token: str, *, notebook: str) -> str:
    header = (f"# The hidden cases of {notebook}.ipynb, written by `inplace-grader nbgrader "
              "source`.\n# `nbgrader autograde` reads them here; keep this file out of "
              "students' reach.\n# Edit the hidden-cases file you passed to --hidden and run "
              "`nbgrader source` again instead.\n")
    return header + _toml({"token": token, "hidden": _hidden_document(hidden)}, hidden)


def _parse_store(text: str, *, where: str) -> tuple[str, HiddenFile]:
    import tomli_w

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise HiddenStoreError(f"{where}: not valid TOML; run `inplace-grader nbgrader source "
                               "--hidden FILE --force` again to rewrite it") from None
    token, document = data.get("token"), data.get("hidden")
    if not isinstance(token, str) or not _TOKEN.fullmatch(token) or not isinstance(
            document, dict):
        raise HiddenStoreError(f"{where}: not a hidden-cases file of `inplace-grader nbgrader "
                               "source` (it needs `token` and [hidden]); run it again")
    return token, parse_hidden_text(tomli_w.dumps(document), source=where)


def read_hidden_store(path: Path, *, token: str | None = None) -> HiddenFile:
    """The hidden cases in `path`; with `token`, only the version a test cell was made for.

    Raises HiddenStoreError (no value of the cases in it), or HiddenFileError for cases that
    no longer validate (which may quote them: for the instructor's eyes only).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
        raise HiddenStoreError(f"{path}: cannot read the hidden cases ({reason}); "
                               "`inplace-grader nbgrader source --hidden FILE` writes it "
                               "beside the assignment's folder") from None
    found, hidden = _parse_store(text, where=str(path))
    if token is not None and found != token:
        raise HiddenStoreError(f"{path}: these hidden cases were written after the test cells "
                               "that name them; run `nbgrader generate_assignment ASSIGNMENT "
                               "--force`, then autograde again")
    return hidden


def store_token(path: Path, hidden: HiddenFile) -> str:
    """The token for writing `hidden` to `path`: the file's own while its cases grade the same
    (`release` aside), so regenerating the notebook to release them leaves its test cells, and
    nbgrader's copy of them, as they are; a new random one otherwise."""
    if path.is_file():
        try:
            token, old = _parse_store(path.read_text(encoding="utf-8"), where=str(path))
        except (UsageError, OSError, UnicodeDecodeError):
            pass  # unreadable: rewritten under a new token
        else:
            if grading_key(old) == grading_key(hidden):
                return token
    return secrets.token_hex(16)


def write_hidden_store(path: Path, hidden: HiddenFile, *, token: str, notebook: str) -> None:
    """Write the cases to `path` (atomically), as `read_hidden_store` reads them back."""
    text = _store_text(hidden, token, notebook=notebook)
    _, again = _parse_store(text, where="generated hidden cases")
    if again.model_dump() != hidden.model_dump():  # a value TOML cannot hold as written
        raise SourceNotebookError(f"{hidden.source}: cannot write its cases back as TOML")
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)


def grade_cell_source(lab: str, function: str, hidden: HiddenRef | None) -> str:
    """The autograded test cell: grade one function; its last expression is the points."""
    lines = ["from grader.notebook import grade_function", ""]
    if hidden is None:
        lines.append(f"grade_function({json.dumps(lab)}, {json.dumps(function)})")
    else:
        lines += ["HIDDEN = None", BEGIN_HIDDEN, f"HIDDEN = {json.dumps(str(hidden))}",
                  END_HIDDEN,
                  f"grade_function({json.dumps(lab)}, {json.dumps(function)}, hidden=HIDDEN)"]
    return "\n".join(lines)


@dataclass(frozen=True)
class GradeCall:
    """What a test cell asks of `grade_function`, read from its source (never run)."""

    lab: str
    function: str
    hidden: str | None  # the cell's HIDDEN: a HiddenRef's text, TOML (older notebooks) or None


def grade_call(source: str) -> GradeCall | None:
    """The `grade_function(lab, function[, hidden=HIDDEN])` call of a test cell written by
    `grade_cell_source` (or by the versions before it); None for any other cell."""
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names: dict[str, str | None] = {}
    call: GradeCall | None = None
    for node in body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, (str, type(None)))):
            names[node.targets[0].id] = node.value.value
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
            continue
        func, args = node.value.func, node.value.args
        if "grade_function" not in (getattr(func, "id", None), getattr(func, "attr", None)):
            continue
        if len(args) != 2 or not all(isinstance(a, ast.Constant) and isinstance(a.value, str)
                                     for a in args):
            return None
        hidden: str | None = None
        for keyword in node.value.keywords:
            if keyword.arg != "hidden":
                return None
            if isinstance(keyword.value, ast.Name) and keyword.value.id in names:
                hidden = names[keyword.value.id]
            elif isinstance(keyword.value, ast.Constant) and isinstance(
                    keyword.value.value, (str, type(None))):
                hidden = keyword.value.value
            else:
                return None
        call = GradeCall(args[0].value, args[1].value, hidden)  # type: ignore[attr-defined]
    return call


def _meta(grade_id: str, *, grade: bool = False, solution: bool = False, locked: bool = False,
          points: float | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"grade": grade, "grade_id": grade_id, "locked": locked,
                            "schema_version": SCHEMA_VERSION, "solution": solution,
                            "task": False}
    if points is not None:
        meta["points"] = int(points) if float(points).is_integer() else points
    return {"nbgrader": meta}


def _cells(segments: list[Segment], lines: list[str]) -> list[tuple[str, str, str]]:
    """(kind, grade id or function name, source) per cell: consecutive given segments make one
    locked cell, `setup` for the first (the imports), `given_<first name defined>` after."""
    cells: list[tuple[str, str, str]] = []
    group: list[Segment] = []

    def flush() -> None:
        if group:
            named = next((s.name for s in group if s.name), str(len(cells)))
            grade_id = "setup" if not cells else f"given_{named}"
            cells.append(("given", grade_id, "".join(lines[group[0].start:group[-1].end])))
            group.clear()

    for segment in segments:
        if segment.kind == "given":
            group.append(segment)
        elif segment.kind == "function":
            flush()
            cells.append(("function", segment.name,
                          "".join(lines[segment.start:segment.end])))
    flush()
    return cells


def source_notebook(lab: str, *, solutions_root: Path, hidden: HiddenFile | None = None,
                    hidden_ref: HiddenRef | None = None, lang: str = "en") -> NotebookNode:
    """The lab's nbgrader source notebook, from `solutions_root/<lab>/<file>.py`. With
    `hidden`, the test cells of the functions it has cases for name `hidden_ref`, the file
    that holds them (the cases themselves stay out of the notebook).

    Raises UnknownLabError, SourceNotebookError, and the engine's UsageError for a hidden-cases
    file that does not fit the lab.
    """
    import nbformat.v4 as nbf

    if hidden is not None and hidden_ref is None:
        raise ValueError("hidden cases need hidden_ref, the file test cells read them from")
    lab_obj = get_lab(lab)
    path = solutions_root / lab / LAB_FILES[lab]
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SourceNotebookError(f"{path}: cannot read the solution ({exc.strerror}); pass "
                                  "--root PROJECT, the folder holding solutions/") from exc
    try:
        make_stub(source, name=str(path))  # balanced markers, or one clear error
    except StubError as exc:
        raise SourceNotebookError(str(exc)) from exc
    segments = split_definitions(source, functions=lab_obj.functions, name=str(path))
    points = function_points(lab_obj, hidden)
    intro = ast.get_docstring(ast.parse(source)) or ""
    cells = [nbf.new_markdown_cell(
        "\n\n".join(p for p in (intro, feedback.ui("notebook_intro", lang)) if p),
        id="intro", metadata=_meta("intro", locked=True))]
    for kind, name, text in _cells(segments, source.splitlines(keepends=True)):
        text = text.rstrip("\n")
        if kind == "given":
            cells.append(nbf.new_code_cell(text, id=name, metadata=_meta(name, locked=True)))
            continue
        if BEGIN not in text:
            raise SourceNotebookError(f"{path}: {name} has no {BEGIN} region; nbgrader "
                                      "would replace the whole cell")
        part = hidden_for(hidden, lab_obj, name) if hidden else None
        cells.append(nbf.new_code_cell(text, id=f"{name}_solution",
                                       metadata=_meta(f"{name}_solution", solution=True)))
        cells.append(nbf.new_code_cell(
            grade_cell_source(lab, name, hidden_ref if part else None),
            id=f"test_{name}",
            metadata=_meta(f"test_{name}", grade=True, locked=True, points=points[name])))
    return nbf.new_notebook(cells=cells, metadata={
        "kernelspec": KERNELSPEC, "language_info": {"name": "python"}})


def write_source_notebook(lab: str, *, solutions_root: Path, out: Path,
                          hidden: HiddenFile | None = None, force: bool = False) -> Path:
    """Write `out/<lab file stem>.ipynb` (nbgrader's source/ASSIGNMENT folder), and with
    `hidden` its cases beside `out` (`hidden_store_path`)."""
    import nbformat

    target = out / Path(LAB_FILES[check_lab_name(lab)]).with_suffix(".ipynb").name
    if target.exists() and not force:
        raise SourceNotebookError(f"{target} exists; pass --force to overwrite it")
    store = hidden_store_path(out, target.stem)
    ref = None
    if hidden is not None:
        ref = HiddenRef(f"{store.parent.name}/{store.name}", store_token(store, hidden))
    notebook = source_notebook(lab, solutions_root=solutions_root, hidden=hidden,
                               hidden_ref=ref)
    if hidden is not None and ref is not None:
        write_hidden_store(store, hidden, token=ref.token, notebook=target.stem)
    out.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, str(target))
    return target
