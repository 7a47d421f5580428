"""Noticing a submission that patched what the grader relies on: torch, tensor methods, the
testing helpers, builtins, the modules the child's own record writing goes through (json, os,
struct, ctypes, sys, ...), the import system's loaders (which decide what code is trusted,
audit.py), the grader's own modules loaded in the child and their classes (its probes, meters,
guards, recorders and record writer), torch.optim's modules and classes, and the torch
functions the probes call (grader/sandbox/probing.py PROBE_CAPTURES) with their modules.

Namespaces are not all: a function object can stay the same while its `__code__`,
`__defaults__`, `__kwdefaults__`, a closure cell or its `__dict__` is replaced (issue 26: a
meter's `__code__`, the record writer's code). Every function of those namespaces (methods,
static and class methods and properties included, and the functions their cells and defaults
hold) is watched in those parts too, by identity, through one `gc.get_referents` call over
them all (a function's referents are its code, globals, defaults, keyword defaults, closure,
`__dict__`, name and annotations; a cell's, its contents; a dict's, its keys and values):
reading `__code__` one function at a time raises an audit event each time.

`watch()` takes a snapshot of each watched namespace in the child before the submission is
imported and returns the function that compares against it. That function binds everything it
calls (builtins included) in its closure, held only by the child's `run_job` frame (frames are
refused to the submission by the audit hook), so replacing this module's globals or a builtin
changes nothing it reports. After the import
and after each task, any attribute that was replaced or deleted is reported by its qualified
name, and so is any name added to a watched class (it shadows a `TensorBase` method or an
encoder method). Names added to a module (a submodule imported later, say) change nothing the
grader calls, so they are not reported. The grader's own observations use accessors captured
before the import (checks/tensors.py), so a report here explains a failure rather than
causing one.
"""

from __future__ import annotations

import builtins
import contextlib
import gc
import operator
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import FunctionType, ModuleType
from typing import Any

GRADER_PACKAGE = __name__.split(".")[0]
# What the child's trusted path calls after the submission ran: the record's encoder, the
# writes, the exception descriptions. A replacement there could rewrite a record on its way
# out. (Not `sys`: students rebind sys.stdout and the like for good reasons, and the child
# captured what it uses of sys before the import.)
TRUSTED_PATH = ("json", "json.encoder", "json.decoder", "struct", "os", "posix", "ctypes",
                "io", "_io", "traceback", "linecache", "functools", "marshal", "_imp",
                "_frozen_importlib", "_frozen_importlib_external")
# Packages whose every module, class and function is watched as the grader's own are.
WATCHED_PACKAGES = (GRADER_PACKAGE, "torch.optim")
FUNCTIONS = "(functions)"  # the key of `watched()` that lists the functions themselves


# Names torch itself rebinds on a lazy import after the snapshot, which the grader never calls:
# importing torch._dynamo (torch.optim's first call does) wraps torch.manual_seed, and every
# input the grader draws comes from a torch.Generator of its own, never the global seed.
UNWATCHED = {"torch": frozenset({"manual_seed"}),
             # State the profiler keeps in its module's globals: whether one is on (the
             # grader's own meter turns it on) and a lazily made monitor.
             "torch.autograd.profiler": frozenset({"_is_profiler_enabled",
                                                   "_cupti_monitor_module",
                                                   "_cupti_monitor_checked"})}
# A module's own description, which the import system rewrites (a reload, refused by the audit
# hook, does so before the hook sees the module's code run) and the grader never reads.
MODULE_METADATA = frozenset({"__spec__", "__loader__", "__package__", "__file__", "__cached__",
                             "__path__", "__name__", "__doc__", "__builtins__"})


def watched() -> dict[str, Any]:
    """The namespaces watched, by qualified name, and under FUNCTIONS the functions watched
    part by part. The zygote finds them once for all its children (they hold the same
    modules): the walk over sys.modules would otherwise copy a page of the zygote's memory
    per module into every child."""
    import _frozen_importlib_external
    import json.encoder

    import torch
    import torch.autograd.profiler
    import torch.nn.functional
    import torch.testing

    from grader.sandbox import probing

    packages = {name: module for name, module in list(sys.modules.items())
                if module is not None and name.startswith(WATCHED_PACKAGES)
                and (name in WATCHED_PACKAGES or name.startswith(
                    tuple(package + "." for package in WATCHED_PACKAGES)))}
    classes = {f"{name}.{attr}": value for name, module in packages.items()
               for attr, value in list(vars(module).items())
               if isinstance(value, type) and getattr(value, "__module__", None) == name}
    trusted = {name: sys.modules[name] for name in TRUSTED_PATH if name in sys.modules}
    loaders = {f"_frozen_importlib_external.{cls.__name__}": cls
               for cls in _frozen_importlib_external.SourceFileLoader.__mro__[:-1]
               + _frozen_importlib_external.SourcelessFileLoader.__mro__[:-1]}
    captured = getattr(probing, "PROBE_CAPTURES", {})
    captured_modules = {str(value.__module__): sys.modules[str(value.__module__)]
                        for value in captured.values()
                        if isinstance(value, FunctionType)
                        and str(value.__module__) in sys.modules}
    spaces: dict[str, Any] = {
        "torch": torch, "torch.Tensor": torch.Tensor, "torch.testing": torch.testing,
        "torch._C": torch._C, "torch._C._autograd": torch._C._autograd,
        "torch.nn.functional": torch.nn.functional, "builtins": builtins,
        # The allocation meter's profiler (checks/allocation.py holds the class itself).
        "torch.autograd.profiler": torch.autograd.profiler,
        "torch.autograd.profiler.profile": torch.autograd.profiler.profile,
        "json.JSONEncoder": json.encoder.JSONEncoder, **trusted, **captured_modules,
        **loaders, **packages, **classes}
    own = [space for name, space in spaces.items()
           if name.startswith(WATCHED_PACKAGES) or name in (
               "torch._C", "torch._C._autograd", "torch.autograd.profiler.profile")]
    spaces[FUNCTIONS] = _baseline(_functions(own, extra=list(captured.values())))
    return spaces


@dataclass(frozen=True)
class _Functions:
    """The functions watched and what the comparison needs of them, made once in the zygote
    rather than by every child before its import (docs/sandbox.md#numbers-behind-the-code)."""

    functions: tuple[FunctionType, ...]
    cells: list[Any]  # every closure cell of theirs
    dicts: list[dict[str, Any]]  # each one's __dict__
    parts: list[list[Any]]  # each one's referents and cell contents, to name what changed
    attributes: list[dict[str, Any]]  # a copy of each __dict__


def _parts(function: Any) -> list[Any]:
    """A function's referents (code, globals, defaults, closure, `__dict__`, names...) and the
    contents of its cells (ValueError for an empty one). No audit event: `__code__` is never
    read."""
    inner: list[Any] = []
    for cell in function.__closure__ or ():
        try:
            inner.append(cell.cell_contents)
        except ValueError:
            inner.append(ValueError)
    return [*gc.get_referents(function), *inner]


def _baseline(functions: tuple[FunctionType, ...]) -> _Functions:
    dicts = [function.__dict__ for function in functions]
    return _Functions(functions=functions,
                      cells=[cell for function in functions for cell in function.__closure__ or ()],
                      dicts=dicts, parts=[_parts(function) for function in functions],
                      attributes=[dict(entries) for entries in dicts])


def _functions(spaces: list[Any], *, extra: Iterable[Any] = ()) -> tuple[FunctionType, ...]:
    """The Python functions of `spaces` (module and class namespaces), those their cells
    and defaults hold, and `extra`; each made ready to be compared by its referents (its
    `__dict__` and `__annotations__` exist, as reading either creates it)."""
    found: dict[int, FunctionType] = {}
    stack: list[Any] = list(extra)
    for space in spaces:
        for value in list(vars(space).values()):
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if isinstance(value, property):
                stack += [value.fget, value.fset, value.fdel]
            else:
                stack.append(value)
    while stack:
        value = stack.pop()
        if type(value) is not FunctionType or id(value) in found:
            continue
        found[id(value)] = value
        value.__dict__, value.__annotations__  # noqa: B018 - made now, not when first read
        for cell in value.__closure__ or ():
            with contextlib.suppress(ValueError):  # a cell not filled yet
                stack.append(cell.cell_contents)
        stack += [*(value.__defaults__ or ()), *(value.__kwdefaults__ or {}).values()]
    return tuple(found.values())


def watch(spaces: dict[str, Any] | None = None) -> Callable[[], list[str]]:
    """Snapshot `spaces` (default: `watched()`) now; the returned function lists what was
    replaced or deleted since (at most 20 qualified names).

    The snapshot holds the names and values themselves and compares both by identity (`is`),
    never with `==` (a planted key or value could answer it: a str subclass equal to two names
    lets two bindings swap unseen) nor with `id()`, which raises an audit event each time and
    so runs the child's hook on every comparison (docs/sandbox.md#numbers-behind-the-code).
    The functions (under FUNCTIONS, else those of `spaces`) are compared by their referents,
    cells and `__dict__` (see the module's docstring)."""
    namespace, is_instance, mapped = builtins.vars, builtins.isinstance, builtins.map
    every, same, length, listed = builtins.all, operator.is_, builtins.len, builtins.list
    enumerated = builtins.enumerate
    is_module, is_class = ModuleType, type
    referents = gc.get_referents
    modules, unwatched, metadata = sys.modules, dict(UNWATCHED), MODULE_METADATA
    spaces = dict(watched() if spaces is None else spaces)
    watching = spaces.pop(FUNCTIONS, None)
    if not isinstance(watching, _Functions):
        watching = _baseline(_functions(listed(spaces.values())))
    before = {name: dict(namespace(space)) for name, space in spaces.items()}
    # Each namespace's names and values, in order: comparing them is a C loop, so a
    # namespace left as it was costs microseconds (the loop below, about a millisecond).
    fingerprints = {name: (list(attributes), list(attributes.values()))
                    for name, attributes in before.items()}
    functions, cells, dicts = watching.functions, watching.cells, watching.dicts
    by_function, attributes_of, function_parts = watching.parts, watching.attributes, _parts

    def parts() -> list[Any]:
        return [*referents(*functions), *referents(*cells), *referents(*dicts)]

    was = [parts()]  # the last fingerprint that held nothing but torch's own additions

    def unchanged(name: str, now: Any) -> bool:
        names, values = fingerprints[name]
        return (length(now) == length(names) and every(mapped(same, now, names))
                and every(mapped(same, now.values(), values)))

    def changed_functions() -> list[str]:
        """Functions with a part replaced, or a `__dict__` entry replaced or deleted. An
        entry added changes nothing the grader calls (torch caches its own there:
        `_disable_dynamo` keeps `__dynamo_disable` on the function it wraps)."""
        found = []
        for index, function in enumerated(functions):
            now, then = function_parts(function), by_function[index]
            entries, kept = dicts[index], attributes_of[index]
            if length(now) != length(then) or not every(mapped(same, now, then)) or not every(
                    key in entries and entries[key] is value for key, value in kept.items()):
                found.append(f"{getattr(function, '__module__', '?')}."
                             f"{getattr(function, '__qualname__', '?')} (its code, defaults, "
                             "closure or attributes)")
        return found

    def changes() -> list[str]:
        found: list[str] = []
        for name, attributes in before.items():
            space = spaces[name]
            if is_instance(space, is_module) and modules.get(name, space) is not space:
                found.append(name)  # a module replaced in sys.modules
                continue
            now = namespace(space)
            if unchanged(name, now):
                continue
            skipped = unwatched.get(name, frozenset()) | (
                metadata if is_instance(space, is_module) else frozenset())
            for attr, was_bound in attributes.items():
                if attr in skipped:
                    continue
                if attr not in now or (now[attr] is not was_bound
                                       and not is_instance(now[attr], is_module)):
                    found.append(f"{name}.{attr}")
            if is_instance(space, is_class):  # on a class, a new name shadows an inherited one
                found += [f"{name}.{attr}" for attr in now if attr not in attributes]
        now = parts()
        if length(now) != length(was[0]) or not every(mapped(same, now, was[0])):
            rewritten = changed_functions()
            found += rewritten
            if not rewritten:
                was[0] = now
        return found[:20]

    return changes
