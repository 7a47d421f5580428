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
    replaced or deleted since (at most 20 qualified names)."""
    identity, namespace, is_instance = builtins.id, builtins.vars, builtins.isinstance
    listing, mapped = builtins.list, builtins.map
    is_module, is_class = ModuleType, type
    modules = sys.modules
    spaces = dict(watched() if spaces is None else spaces)
    before = {name: {attr: identity(value) for attr, value in list(namespace(space).items())}
              for name, space in spaces.items()}
    # Each namespace's names and its values' ids, in order: comparing them is a C loop, so a
    # namespace left as it was costs microseconds (the loop below, about 1 ms per call).
    fingerprints = {name: (list(attributes), list(attributes.values()))
                    for name, attributes in before.items()}

    def changes() -> list[str]:
        found: list[str] = []
        for name, attributes in before.items():
            space = spaces[name]
            if is_instance(space, is_module) and modules.get(name, space) is not space:
                found.append(name)  # a module replaced in sys.modules
                continue
            now = namespace(space)
            names, ids = fingerprints[name]
            if listing(now) == names and listing(mapped(identity, now.values())) == ids:
                continue
            for attr, was in attributes.items():
                if attr not in now or (identity(now[attr]) != was
                                       and not is_instance(now[attr], is_module)):
                    found.append(f"{name}.{attr}")
            if is_instance(space, is_class):  # on a class, a new name shadows an inherited one
                found += [f"{name}.{attr}" for attr in now if attr not in attributes]
        return found[:20]

    return changes
