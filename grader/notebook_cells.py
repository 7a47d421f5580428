"""Which cells of a notebook are nbgrader's or the grader's, not the student's answer.

A notebook is graded as the code its student wrote: nbgrader's autograder test cells and
the cells that call `grade_function` (grader.notebook) are left out of what the sandbox
runs, so grading a notebook never grades itself from inside the submission.
"""

from __future__ import annotations

import ast
import unicodedata
from collections.abc import Mapping
from typing import Any


def is_autograder_test(cell: Mapping[str, Any]) -> bool:
    """An nbgrader autograder test cell: graded, not a student's answer. `grade` and
    `solution` are read as nbgrader reads them (truthy values); any other shape of metadata
    (not an object, no nbgrader object in it) makes the cell the student's."""
    metadata = cell.get("metadata") if isinstance(cell, Mapping) else None
    meta = metadata.get("nbgrader") if isinstance(metadata, Mapping) else None
    if not isinstance(meta, Mapping):
        return False
    return bool(meta.get("grade")) and not meta.get("solution")


def is_grader_cell(source: str) -> bool:
    """A cell that imports `grader.notebook` or calls `grade_function`: the grader's, not the
    student's code. A cell that does not parse is the student's (its error is reported)."""
    # Python reads identifiers as their NFKC form: a cell whose NFKC form names neither is not
    # the grader's, and is not parsed here (a syntax tree costs hundreds of bytes a node).
    if "grade" not in unicodedata.normalize("NFKC", source):
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
                alias.name.startswith("grader.notebook") for alias in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (
                node.module == "grader.notebook"
                or (node.module == "grader" and any(a.name == "notebook" for a in node.names))):
            return True
        if isinstance(node, ast.Call) and "grade_function" in (
                getattr(node.func, "id", None), getattr(node.func, "attr", None)):
            return True
    return False
