"""What `check` can tell of a submission without running it, in a fraction of a torch import:
that it does not parse, or that it cannot define any of the lab's names (another lab's file, a
wrong upload). Read as data, never run: the file is compiled to a syntax tree and bytecode,
which runs none of it.

"Cannot define" is decided conservatively, so that no honest file is ever told so wrongly: a
file that names a lab function anywhere, or could define names the text does not show (a star
import, `globals()`, `exec`, a module `__getattr__`, ...), goes to the sandbox, which sees what
the import actually defines.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

from grader.sandbox.exceptions import describe_exception

# Names through which a module can gain attributes its text does not spell out.
DYNAMIC = frozenset({
    "globals", "vars", "locals", "setattr", "exec", "eval", "compile", "__import__",
    "importlib", "__dict__", "__getattr__", "__setattr__", "modules", "builtins",
    "__builtins__", "__class__", "runpy", "pickle", "marshal", "ctypes", "types",
    "ModuleType",
})
# What the child names the submission's copy: the same name, the same description.
SUBMISSION_FILE = os.path.join(os.sep, "submission", "submission.py")


def syntax_error(source: str) -> dict[str, Any] | None:
    """The SyntaxError importing `source` would raise, described as the child describes it
    (sandbox/exceptions.py), or None where it compiles. A source the compiler cannot take at
    all here (a null byte, too deep to parse) is the sandbox's to tell."""
    try:
        compile(source, SUBMISSION_FILE, "exec", dont_inherit=True)
    except SyntaxError as exc:
        lines = source.splitlines()
        if exc.text is None and isinstance(exc.lineno, int) and 0 < exc.lineno <= len(lines):
            exc.text = lines[exc.lineno - 1]  # an import reads it from the file; a string has none
        return describe_exception(exc)
    except (ValueError, RecursionError, MemoryError):
        return None
    return None


def cannot_define(source: str, names: list[str], folder: Path | None) -> bool:
    """Whether `source`, imported, certainly defines none of `names`: no identifier or text
    in it spells one, it uses nothing that defines names dynamically, and it imports nothing
    from its own `folder` (a module there could add names to it as it is imported)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    wanted = set(names)
    for node in ast.walk(tree):
        spelled = _spelled(node)
        if spelled & (wanted | DYNAMIC):
            return False
        if isinstance(node, ast.ImportFrom) and (
                node.level or any(a.name == "*" for a in node.names)):
            return False
        if folder is not None and any(_in_folder(module, folder) for module in _imported(node)):
            return False
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes) and any(
                name in str(node.value) for name in names):
            return False
    return True


def _imported(node: ast.AST) -> list[str]:
    """The top-level modules an import statement names."""
    if isinstance(node, ast.Import):
        return [alias.name.partition(".")[0] for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module:
        return [node.module.partition(".")[0]]
    return []


def _in_folder(module: str, folder: Path) -> bool:
    try:
        return (folder / f"{module}.py").exists() or (folder / module).is_dir() or any(
            folder.glob(f"{module}.*"))
    except (OSError, ValueError):
        return True


def _spelled(node: ast.AST) -> set[str]:
    """The identifiers a node spells (the parser has normalised them as Python does)."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.alias):
        return {node.name, *(node.name.split(".")), node.asname or ""}
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, ast.keyword):
        return {node.arg or ""}
    if isinstance(node, ast.Global | ast.Nonlocal):
        return set(node.names)
    if isinstance(node, ast.MatchAs | ast.MatchStar):
        return {node.name or ""}
    return set()
