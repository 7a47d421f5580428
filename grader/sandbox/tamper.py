"""Noticing a submission that patched what the grader relies on: torch, tensor methods, the
testing helpers, builtins, the modules the child's own record writing goes through (json, os,
struct, ctypes, sys, ...) and the grader's own modules loaded in the child (its probes and their
captured accessors).

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
import operator
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

GRADER_PACKAGE = __name__.split(".")[0]
# What the child's trusted path calls after the submission ran: the record's encoder, the
# writes, the exception descriptions. A replacement there could rewrite a record on its way
# out. (Not `sys`: students rebind sys.stdout and the like for good reasons, and the child
# captured what it uses of sys before the import.)
TRUSTED_PATH = ("json", "json.encoder", "json.decoder", "struct", "os", "posix", "ctypes",
                "io", "traceback", "linecache", "functools")


# Names torch itself rebinds on a lazy import after the snapshot, which the grader never calls:
# importing torch._dynamo (torch.optim's first call does) wraps torch.manual_seed, and every
# input the grader draws comes from a torch.Generator of its own, never the global seed.
UNWATCHED = {"torch": frozenset({"manual_seed"})}


def watched() -> dict[str, Any]:
    """The namespaces watched, by qualified name. The zygote finds them once for all its
    children (they hold the same modules): the walk over sys.modules would otherwise copy
    a page of the zygote's memory per module into every child."""
    import json.encoder

    import torch
    import torch.nn.functional
    import torch.testing

    grader = {name: module for name, module in list(sys.modules.items())
              if name == GRADER_PACKAGE or name.startswith(GRADER_PACKAGE + ".")}
    trusted = {name: sys.modules[name] for name in TRUSTED_PATH if name in sys.modules}
    return {"torch": torch, "torch.Tensor": torch.Tensor, "torch.testing": torch.testing,
            "torch._C": torch._C, "torch._C._autograd": torch._C._autograd,
            "torch.nn.functional": torch.nn.functional, "builtins": builtins,
            "json.JSONEncoder": json.encoder.JSONEncoder, **trusted, **grader}


def watch(spaces: dict[str, Any] | None = None) -> Callable[[], list[str]]:
    """Snapshot `spaces` (default: `watched()`) now; the returned function lists what was
    replaced or deleted since (at most 20 qualified names).

    The snapshot holds the names and values themselves and compares both by identity (`is`),
    never with `==` (a planted key or value could answer it: a str subclass equal to two names
    lets two bindings swap unseen) nor with `id()`, which raises an audit event each time:
    under the child's hook, that made one comparison 0.9 ms instead of 0.12."""
    namespace, is_instance, mapped = builtins.vars, builtins.isinstance, builtins.map
    every, same, length = builtins.all, operator.is_, builtins.len
    is_module, is_class = ModuleType, type
    modules, unwatched = sys.modules, dict(UNWATCHED)
    spaces = dict(watched() if spaces is None else spaces)
    before = {name: dict(namespace(space)) for name, space in spaces.items()}
    # Each namespace's names and values, in order: comparing them is a C loop, so a
    # namespace left as it was costs microseconds (the loop below, about a millisecond).
    fingerprints = {name: (list(attributes), list(attributes.values()))
                    for name, attributes in before.items()}

    def unchanged(name: str, now: Any) -> bool:
        names, values = fingerprints[name]
        return (length(now) == length(names) and every(mapped(same, now, names))
                and every(mapped(same, now.values(), values)))

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
            skipped = unwatched.get(name, frozenset())
            for attr, was in attributes.items():
                if attr in skipped:
                    continue
                if attr not in now or (now[attr] is not was
                                       and not is_instance(now[attr], is_module)):
                    found.append(f"{name}.{attr}")
            if is_instance(space, is_class):  # on a class, a new name shadows an inherited one
                found += [f"{name}.{attr}" for attr in now if attr not in attributes]
        return found[:20]

    return changes
