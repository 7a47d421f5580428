"""Noticing a submission that patched what the grader relies on (torch, tensor methods, the
testing helpers, builtins, and the grader's own modules loaded in the child: its probes and
their captured accessors).

A snapshot of each watched namespace is taken in the child before the submission is imported;
after the import and after each task, any attribute that was replaced or deleted is reported by
its qualified name, and so is any name added to `torch.Tensor` (it shadows a `TensorBase`
method). Names added to a module (a submodule imported later, say) change nothing the grader
calls, so they are not reported. The grader's own observations use accessors captured before
the import (checks/tensors.py), so a report here explains a failure rather than causing one.
"""

from __future__ import annotations

import builtins
import sys
from types import ModuleType
from typing import Any

GRADER_PACKAGE = __name__.split(".")[0]


def _watched() -> dict[str, Any]:
    import torch
    import torch.nn.functional
    import torch.testing

    grader = {name: module for name, module in list(sys.modules.items())
              if name == GRADER_PACKAGE or name.startswith(GRADER_PACKAGE + ".")}
    return {"torch": torch, "torch.Tensor": torch.Tensor, "torch.testing": torch.testing,
            "torch.nn.functional": torch.nn.functional, "builtins": builtins, **grader}


Snapshot = dict[str, dict[str, int]]
_id = builtins.id  # captured at import, before any submission: `builtins.id` itself may be patched
_vars = builtins.vars


def snapshot() -> Snapshot:
    """The identity of every attribute of every watched namespace."""
    return {name: {attr: _id(value) for attr, value in list(_vars(space).items())}
            for name, space in _watched().items()}


def changes(before: Snapshot) -> list[str]:
    """Qualified names replaced or deleted since `before` (at most 20)."""
    found: list[str] = []
    watched = _watched()
    for name in before:
        space = watched.get(name)
        if space is None:  # a grader module taken out of sys.modules
            found.append(name)
            continue
        now = _vars(space)
        for attr, identity in before[name].items():
            gone = attr not in now
            if gone or (_id(now[attr]) != identity and not isinstance(now[attr], ModuleType)):
                found.append(f"{name}.{attr}")
        if isinstance(space, type):  # on a class, a new name shadows an inherited method
            found += [f"{name}.{attr}" for attr in now if attr not in before[name]]
    return found[:20]

