"""Policy: forbidden APIs (here `torch.optim`), found however the module was reached.

Two independent witnesses, so neither an untested code path nor an indirect route hides a use:
- statically, in the grading process: the submission's syntax tree, attributing each use to the
  lab function or class whose body (or helpers it calls) reaches the forbidden module;
- dynamically, in the child: every function and method defined in the forbidden package is
  wrapped before the submission is imported, and calls made while a lab function runs are
  recorded for that function (getattr, importlib and exec routes included).
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from typing import Any

from grader.checks.findings import PASS, Finding, fail

# --- child side -----------------------------------------------------------------------------

class CallRecorder:
    """Wraps the callables of a package; `calls` lists the qualified names used since reset."""

    def __init__(self, package: str) -> None:
        self.package = package
        self.calls: list[str] = []

    def reset(self) -> None:
        self.calls = []

    def install(self) -> None:
        for module_name, module in list(sys.modules.items()):
            if module is None or not (
                module_name == self.package or module_name.startswith(self.package + ".")
            ):
                continue
            for attr, obj in list(vars(module).items()):
                if getattr(obj, "__module__", None) != module_name:
                    continue
                if isinstance(obj, type):
                    for method in ("__init__", "step", "zero_grad"):
                        if method in vars(obj):
                            setattr(obj, method, self._wrap(vars(obj)[method],
                                                            f"{module_name}.{attr}.{method}"))
                elif callable(obj) and hasattr(obj, "__code__"):
                    setattr(module, attr, self._wrap(obj, f"{module_name}.{attr}"))

    def _wrap(self, func: Any, qualname: str) -> Any:
        if getattr(func, "__grader_wrapped__", False):
            return func

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if len(self.calls) < 50:
                self.calls.append(qualname)
            return func(*args, **kwargs)

        wrapper.__grader_wrapped__ = True  # type: ignore[attr-defined]
        return wrapper


# --- grading-process side -------------------------------------------------------------------

def static_uses(source: str, *, package: str, names: list[str]) -> dict[str, list[str]]:
    """For each lab name, the source lines by which it reaches `package` (empty: none found).

    The tree is walked once (a batch runs this for every submission): each top-level statement's
    nodes are listed, imports anywhere give the aliases, then each definition's own nodes are
    searched for the package and for the other definitions it calls.
    """
    tree = ast.parse(source)
    root, _, leaf = package.partition(".")
    torch_aliases: set[str] = set()
    package_aliases: set[str] = set()
    statements = [(stmt, list(ast.walk(stmt))) for stmt in tree.body]
    for _, nodes in statements:
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    reaches = alias.name == package or alias.name.startswith(package + ".")
                    if reaches and alias.asname:
                        package_aliases.add(alias.asname)  # import torch.optim as O
                    elif alias.name == root or (not alias.asname
                                                and alias.name.startswith(root + ".")):
                        torch_aliases.add(alias.asname or root)  # import torch / torch.nn
            elif isinstance(node, ast.ImportFrom) and node.module:
                if node.module == package or node.module.startswith(package + "."):
                    package_aliases.update(a.asname or a.name for a in node.names)
                elif node.module == root:
                    package_aliases.update(a.asname or a.name for a in node.names
                                           if a.name == leaf)

    module_path = re.compile(re.escape(package) + r"(\.[\w.]*)?")

    def reaches_package(sub: ast.AST) -> bool:
        if isinstance(sub, ast.Attribute):
            return (sub.attr == leaf and isinstance(sub.value, ast.Name)
                    and sub.value.id in torch_aliases)
        if isinstance(sub, ast.Name):
            return sub.id in package_aliases
        if isinstance(sub, ast.Call):  # importlib.import_module("torch.optim"), getattr
            return any(isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                       and bool(module_path.fullmatch(arg.value) or arg.value == leaf)
                       for arg in sub.args)
        if isinstance(sub, ast.Import):
            return any(a.name == package or a.name.startswith(package + ".")
                       for a in sub.names)
        if isinstance(sub, ast.ImportFrom):
            module = sub.module or ""
            return module == package or module.startswith(package + ".")
        return False

    definitions = {stmt.name: nodes for stmt, nodes in statements
                   if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    evidence = {
        name: [f"line {sub.lineno}: {ast.get_source_segment(source, sub) or ''}"
               for sub in nodes if hasattr(sub, "lineno") and reaches_package(sub)]
        for name, nodes in definitions.items()
    }
    references = {
        name: {sub.id for sub in nodes if isinstance(sub, ast.Name)} & set(definitions)
        for name, nodes in definitions.items()
    }
    changed = True
    while changed:  # helpers that reach the package taint their callers
        changed = False
        for name, refs in references.items():
            if evidence[name]:
                continue
            tainted = sorted(r for r in refs if r != name and evidence[r])
            if tainted:
                evidence[name] = [f"calls {tainted[0]}, which uses {package}"]
                changed = True
    return {name: evidence.get(name, []) for name in names}


def judge_policy(*, package: str, static: list[str], calls: list[str]) -> Finding:
    if calls:
        return fail("policy_called", package=package, what=calls[0])
    if static:
        return fail("policy_referenced", package=package, what=static[0])
    return PASS
