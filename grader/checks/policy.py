"""Policy: forbidden APIs (here `torch.optim`), found however the module was reached.

Two independent witnesses, so neither an untested code path nor an indirect route hides a use:
- statically, in the child before the submission is imported (source.py): the syntax tree,
  attributing each use to the lab function or class whose body (or helpers it calls) reaches
  the forbidden module;
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
from grader.checks.source import Source, attribute, parse

# --- child side -----------------------------------------------------------------------------

POLICY_EVENT = "inplace-grader.policy"  # the child's audit hook relays these to the worker


class CallRecorder:
    """Wraps the callables of a package so that each call raises POLICY_EVENT with its
    qualified name: the child's audit hook relays it to the worker at once, as a `C` line
    (nothing is kept here that a submission could empty)."""

    def __init__(self, package: str) -> None:
        self.package = package

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
        event = sys.audit

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            event(POLICY_EVENT, qualname)
            return func(*args, **kwargs)

        wrapper.__grader_wrapped__ = True  # type: ignore[attr-defined]
        # functools.wraps points __wrapped__ at the original: a submission could call that
        # and pass unrecorded. (The closure still holds it; the integrity scan flags
        # `__closure__`.)
        del wrapper.__wrapped__  # type: ignore[attr-defined]
        return wrapper


# --- child side, before the import: the source -------------------------------------------

# Calls that dereference a module named by a string: only there is a string a use.
IMPORTERS = frozenset({"import_module", "__import__", "reload", "find_spec"})


def static_uses(source: str | Source, *, package: str, names: list[str]
                ) -> dict[str, list[str]]:
    """For each lab name, the source lines by which it reaches `package` (empty: none found).

    A use is an import of the package, a name bound to it (by import, or by assignment at
    module level: `O = torch.optim` then `O.SGD`), an attribute chain that dereferences it
    (`torch.optim`), or a string naming it passed to an importer (`import_module`,
    `__import__`) or to `getattr` on torch. A string anywhere else is not a use: code may ask
    whether an object comes from torch.optim without using it
    (`type(params).__module__.startswith("torch.optim")`).
    """
    parsed = source if isinstance(source, Source) else parse(source)
    root, _, leaf = package.partition(".")
    torch_aliases: set[str] = set()
    package_aliases: set[str] = set()
    nodes = parsed.nodes
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

    def names_package(arg: ast.AST) -> bool:
        return (isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                and bool(module_path.fullmatch(arg.value)))

    def reaches_package(sub: ast.AST) -> bool:
        if isinstance(sub, ast.Attribute):
            return (sub.attr == leaf and isinstance(sub.value, ast.Name)
                    and sub.value.id in torch_aliases)
        if isinstance(sub, ast.Name):
            return sub.id in package_aliases
        if isinstance(sub, ast.Call):
            called = sub.func.attr if isinstance(sub.func, ast.Attribute) else getattr(
                sub.func, "id", "")
            if called in IMPORTERS:  # importlib.import_module("torch.optim")
                return any(names_package(arg) for arg in sub.args)
            if called == "getattr" and len(sub.args) >= 2:  # getattr(torch, "optim")
                target, attribute = sub.args[0], sub.args[1]
                return (isinstance(target, ast.Name) and target.id in torch_aliases
                        and isinstance(attribute, ast.Constant) and attribute.value == leaf)
            return False
        if isinstance(sub, ast.Import):
            return any(a.name == package or a.name.startswith(package + ".")
                       for a in sub.names)
        if isinstance(sub, ast.ImportFrom):
            module = sub.module or ""
            return module == package or module.startswith(package + ".")
        return False

    def uses_package(value: ast.AST) -> bool:
        return any(reaches_package(sub) for sub in ast.walk(value))

    # Names bound by assignment at module level (outside a main guard): a name assigned
    # inside one function means nothing in another.
    assignments = [stmt for stmt, _ in parsed.top_level()
                   if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None]
    changed = True
    while changed:  # names bound to the package, or to something reached through it
        changed = False
        for node in assignments:
            assert node.value is not None
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound = {t.id for t in targets if isinstance(t, ast.Name)} - package_aliases
            if bound and uses_package(node.value):
                package_aliases.update(bound)
                changed = True

    return attribute(parsed, names, lambda sub: "" if reaches_package(sub) else None).by_name


def judge_policy(*, package: str, static: list[str], calls: list[str]) -> Finding:
    if calls:
        return fail("policy_called", package=package, what=calls[0])
    if static:
        return fail("policy_referenced", package=package, what=static[0])
    return PASS
