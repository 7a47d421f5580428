"""nbgrader: one source notebook per lab, generated from solutions/ (the single source).

The notebook holds, in the solution file's order: the module's docstring (a markdown cell), its
imports and any code students are given (locked cells), and for each lab function or class one
solution cell (its definition, `### BEGIN/END SOLUTION` kept for nbgrader to replace) followed by
one autograded test cell. A test cell calls `grader.notebook.grade_function` for that function:
it is worth the points the function can earn on the CPU, and its value is the points earned, so
nbgrader gives partial credit. Hidden cases go between `### BEGIN HIDDEN TESTS` and
`### END HIDDEN TESTS`, which `nbgrader generate_assignment` strips from the students' copy and
`nbgrader autograde` restores from its gradebook.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader import feedback
from grader.errors import UsageError
from grader.hidden import HiddenFile, parse_hidden_text
from grader.labs import LAB_FILES, check_lab_name, get_lab
from grader.stubs import BEGIN, StubError, make_stub

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


def hidden_toml(hidden: HiddenFile) -> str:
    """`hidden` written back as TOML that `parse_hidden_text` reads to the same file."""
    import tomli_w

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
    try:
        text = tomli_w.dumps(document)
    except TypeError as exc:  # a value TOML has no type for
        raise SourceNotebookError(f"{hidden.source}: cannot write its cases as TOML ({exc})"
                                  ) from exc
    again = parse_hidden_text(text, source="generated hidden tests")
    if again.model_dump() != hidden.model_dump():  # a value TOML cannot hold as written
        raise SourceNotebookError(f"{hidden.source}: cannot write its cases back as TOML")
    return text


def _python_string(text: str) -> str:
    """`text` as a readable Python literal: a raw triple-quoted string where that reads back
    the same, else its repr."""
    literal = f"r'''{text}'''"
    try:
        if ast.literal_eval(literal) == text:
            return literal
    except (SyntaxError, ValueError):
        pass
    return repr(text)


def grade_cell_source(lab: str, function: str, hidden: str | None) -> str:
    """The autograded test cell: grade one function; its last expression is the points."""
    lines = ["from grader.notebook import grade_function", ""]
    if hidden is None:
        lines.append(f"grade_function({json.dumps(lab)}, {json.dumps(function)})")
    else:
        lines += ["HIDDEN = None", BEGIN_HIDDEN, f"HIDDEN = {_python_string(hidden)}",
                  END_HIDDEN,
                  f"grade_function({json.dumps(lab)}, {json.dumps(function)}, hidden=HIDDEN)"]
    return "\n".join(lines)


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
                    lang: str = "en") -> NotebookNode:
    """The lab's nbgrader source notebook, from `solutions_root/<lab>/<file>.py`.

    Raises UnknownLabError, SourceNotebookError, and the engine's UsageError for a hidden-cases
    file that does not fit the lab.
    """
    import nbformat.v4 as nbf

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
            grade_cell_source(lab, name, hidden_toml(part) if part else None),
            id=f"test_{name}",
            metadata=_meta(f"test_{name}", grade=True, locked=True, points=points[name])))
    return nbf.new_notebook(cells=cells, metadata={
        "kernelspec": KERNELSPEC, "language_info": {"name": "python"}})


def write_source_notebook(lab: str, *, solutions_root: Path, out: Path,
                          hidden: HiddenFile | None = None, force: bool = False) -> Path:
    """Write `out/<lab file stem>.ipynb` (nbgrader's source/ASSIGNMENT folder)."""
    import nbformat

    target = out / Path(LAB_FILES[check_lab_name(lab)]).with_suffix(".ipynb").name
    if target.exists() and not force:
        raise SourceNotebookError(f"{target} exists; pass --force to overwrite it")
    notebook = source_notebook(lab, solutions_root=solutions_root, hidden=hidden)
    out.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, str(target))
    return target

