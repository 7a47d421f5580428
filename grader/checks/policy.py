"""Policy: forbidden APIs (here `torch.optim`), found however the module was reached.

Two independent witnesses, so neither an untested code path nor an indirect route hides a use:
- statically, in the child before the submission is imported (source.py): the syntax tree,
  attributing each use to the lab function or class whose body (or helpers it calls) reaches
  the forbidden module;
- dynamically, in the child: every function and method defined in the forbidden package is
  wrapped before the submission is imported, and calls made while a lab function runs are
  recorded for that function (getattr, importlib, exec, subclass and `__mro__` routes
  included; the wrappers hold no original to unwrap).
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from grader.checks.findings import PASS, Finding, fail
from grader.checks.source import Source, attribute, parse

# --- child side -----------------------------------------------------------------------------

POLICY_EVENT = "inplace-grader.policy"  # the child's audit hook relays these to the worker


class CallRecorder:
    """Wraps the callables of a package so that each call raises POLICY_EVENT with its
    qualified name: the child's audit hook relays it to the worker at once, as a `C` line
    (nothing is kept here that a submission could empty).

    Every function defined in the package is wrapped wherever the package binds it (a kernel
    that `torch.optim._functional` re-exports from `torch.optim.sgd` is the same wrapper in
    both), and so are the optimizers' `__init__`, `step` and `zero_grad`: a subclass, an alias
    or a class reached through `__mro__` calls them. No wrapper holds its original: the
    originals are held by an audit hook (sandbox/audit.py `keep_originals`), so neither
    `__wrapped__` nor a closure cell gives an unrecorded route; the tamper watch names a
    wrapper replaced or rewritten (its `__code__`, its cells)."""

    def __init__(self, package: str) -> None:
        self.package = package

    def _ours(self, module_name: object) -> bool:
        return isinstance(module_name, str) and (
            module_name == self.package or module_name.startswith(self.package + "."))

    def install(self, keep_originals: Callable[..., None]) -> None:
        """Wrap the package's callables; `keep_originals` (sandbox/audit.py, passed in by the
        probes that run in the zygote) holds the originals where no wrapper can reach them."""
        originals: dict[str, Any] = {}
        wrappers: dict[int, Any] = {}  # id(original) -> its one wrapper
        for module_name, module in list(sys.modules.items()):
            if module is None or not self._ours(module_name):
                continue
            for attr, obj in list(vars(module).items()):
                if not self._ours(getattr(obj, "__module__", None)):
                    continue
                if isinstance(obj, type):
                    for method in ("__init__", "step", "zero_grad"):
                        if method in vars(obj):
                            setattr(obj, method, self._wrap(
                                vars(obj)[method], f"{obj.__module__}.{obj.__qualname__}."
                                f"{method}", originals, wrappers))
                elif callable(obj) and hasattr(obj, "__code__"):
                    setattr(module, attr, self._wrap(
                        obj, f"{obj.__module__}.{getattr(obj, '__qualname__', attr)}",
                        originals, wrappers))
        if wrappers:
            keep_originals(POLICY_EVENT, originals,
                           caller=next(iter(wrappers.values())).__code__)

    def _wrap(self, func: Any, qualname: str, originals: dict[str, Any],
              wrappers: dict[int, Any]) -> Any:
        if getattr(func, "__grader_wrapped__", False):
            return func
        if id(func) in wrappers:
            return wrappers[id(func)]
        event = sys.audit
        while qualname in originals:  # two functions of one name: each keeps its own
            qualname += "'"
        originals[qualname] = func

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            hand: list[Any] = []
            event(POLICY_EVENT, qualname, hand)  # recorded, and the original handed over
            return hand.pop()(*args, **kwargs)

        wrapper.__grader_wrapped__ = True  # type: ignore[attr-defined]
        # torch.optim.Optimizer.__init__ wraps a class's `step` in a profiling hook once
        # (`_patch_step_function`), which would rebind it after the tamper snapshot: marked
        # as hooked, it stays this wrapper.
        wrapper.hooked = True  # type: ignore[attr-defined]
        # functools.wraps points __wrapped__ at the original: a submission could call that
        # and pass unrecorded.
        del wrapper.__wrapped__  # type: ignore[attr-defined]
        wrappers[id(func)] = wrapper
        return wrapper


# --- child side, before the import: the source -------------------------------------------

# Calls that dereference a module named by a string: only there is a string a use.
IMPORTERS = frozenset({"import_module", "__import__", "reload", "find_spec"})


def static_uses(source: str | Source, *, package: str, names: Sequence[str]
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
