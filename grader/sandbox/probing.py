"""Child-side helpers every lab's probes share, and the torch functions they call after the
submission's import, taken before it.

NOTE: [probe captures]. The zygote imports the probes (and so this module) before it forks any
child, so the references below are taken before any submission runs. A probe calls torch's
functions through them, never by a name looked up after the import in a namespace the
submission can rebind (`vars(torch.autograd)["gradcheck"] = ...`, issue 26): Python-level
tensor methods (`Tensor.backward`) are not called either, since they look up
`torch.autograd` themselves. tests/labs/test_probe_namespaces.py derives, from the probes'
code, that no probe looks a torch name up at call time outside the namespaces the tamper
watch covers. What a capture does not cover: a captured Python function still runs its own
`__code__` against its module's live globals (gradcheck's helpers in
`torch.autograd.gradcheck`'s namespace); replacing those is for the tamper watch, which
watches the objects in PROBE_CAPTURES.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch
import torch.autograd.graph

Case = dict[str, Any]

# Python functions: the object is kept, its code and globals are not (see the note).
gradcheck = torch.autograd.gradcheck
cuda_synchronize = torch.cuda.synchronize
cuda_reset_peak_memory_stats = torch.cuda.reset_peak_memory_stats
cuda_memory_allocated = torch.cuda.memory_allocated
cuda_max_memory_allocated = torch.cuda.max_memory_allocated
# C functions and bound methods: nothing of them is reachable from Python.
_run_backward = torch.autograd.graph.Variable._execution_engine.run_backward
_ones_like = torch.ones_like
_stash_in_tls, _remove_from_tls = torch._C._stash_obj_in_tls, torch._C._remove_obj_from_tls
_copy_context = contextvars.copy_context
_enter_dual_level, _exit_dual_level = torch._C._enter_dual_level, torch._C._exit_dual_level
_make_dual, _unpack_dual = torch._make_dual, torch._unpack_dual
_is_grad_enabled, _set_grad_enabled = torch._C.is_grad_enabled, torch._C._set_grad_enabled
Tensor = torch.Tensor

# Every torch callable the probes use after the import, by the name it was taken from: what the
# tamper watch is to watch (`__code__`, `__defaults__`, `__kwdefaults__`, `__dict__`, closure).
PROBE_CAPTURES: dict[str, Any] = {
    "torch.autograd.gradcheck": gradcheck,
    "torch.autograd.graph.Variable._execution_engine.run_backward": _run_backward,
    "torch.ones_like": _ones_like,
    "torch._C._stash_obj_in_tls": _stash_in_tls,
    "torch._C._remove_obj_from_tls": _remove_from_tls,
    "contextvars.copy_context": _copy_context,
    "torch._C._enter_dual_level": _enter_dual_level,
    "torch._C._exit_dual_level": _exit_dual_level,
    "torch._make_dual": _make_dual,
    "torch._unpack_dual": _unpack_dual,
    "torch._C.is_grad_enabled": _is_grad_enabled,
    "torch._C._set_grad_enabled": _set_grad_enabled,
    "torch.cuda.synchronize": cuda_synchronize,
    "torch.cuda.reset_peak_memory_stats": cuda_reset_peak_memory_stats,
    "torch.cuda.memory_allocated": cuda_memory_allocated,
    "torch.cuda.max_memory_allocated": cuda_max_memory_allocated,
    "torch.Tensor": Tensor,
}


def backward(loss: torch.Tensor) -> None:
    """`loss.backward()` for a scalar `loss`, as torch.autograd.backward runs it (a gradient of
    ones, no graph kept), straight into autograd's engine: no name of torch.autograd is looked
    up, so none the submission rebinds is called."""
    _stash_in_tls("context", _copy_context())
    try:
        _run_backward((loss,), (_ones_like(loss),), False, False, (), allow_unreachable=True,
                      accumulate_grad=True)
    finally:
        _remove_from_tls("context")


class forward_mode:  # read as torch.autograd.forward_ad.dual_level, which it replaces
    """A level of forward-mode AD over the captured C functions: `dual(t, tangent)` makes a
    tensor carrying a tangent, `tangent(t)` reads it back (None: it carries none)."""

    def __enter__(self) -> forward_mode:
        self.level = _enter_dual_level()
        return self

    def __exit__(self, *exc: object) -> None:
        _exit_dual_level(level=self.level)

    def dual(self, primal: torch.Tensor, tangent: torch.Tensor) -> torch.Tensor:
        return _make_dual(primal, tangent, level=self.level)

    def tangent(self, tensor: torch.Tensor) -> torch.Tensor | None:
        return _unpack_dual(tensor, level=self.level)[1]


class enable_grad:  # read as torch.enable_grad, which it replaces in the probes
    """`torch.enable_grad()` over the captured C switches: a probe that asks autograd what it
    saw records a graph even where the submission turned grad mode off at import."""

    def __enter__(self) -> None:
        self.previous = _is_grad_enabled()
        _set_grad_enabled(True)

    def __exit__(self, *exc: object) -> None:
        _set_grad_enabled(self.previous)


class no_grad:  # read as torch.no_grad, which it replaces in the probes
    """`torch.no_grad()` over the captured C switches (torch's own class looks its switches up
    in `torch` when entered)."""

    def __enter__(self) -> None:
        self.previous = _is_grad_enabled()
        _set_grad_enabled(False)

    def __exit__(self, *exc: object) -> None:
        _set_grad_enabled(self.previous)


def missing_name(function: str) -> dict[str, Any]:
    """The observation for a case whose lab function the submission does not define."""
    return {"error": {"type": "AttributeError", "bases": ["AttributeError", "Exception"],
                      "message": f"no {function}", "location": "", "traceback": ""}}


def run_cases(module: ModuleType, function: str, cases: list[Case],
              run_case: Callable[[Any, Case], dict[str, Any]]) -> dict[str, Any]:
    """Each case's observation, keyed by case id."""
    target = getattr(module, function, None)
    return {case["id"]: missing_name(function) if target is None else run_case(target, case)
            for case in cases}
