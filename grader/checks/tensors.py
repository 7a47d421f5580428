"""Tensor state as data: what the child records about a tensor before and after a call.

The accessors are taken from `torch._C.TensorBase` when this module is imported, before any
submission is, so a submission that patches `torch.Tensor.data_ptr` or `_version` does not
change what the grader sees.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

_TensorBase = torch._C.TensorBase
_data_ptr = _TensorBase.data_ptr
_version = vars(_TensorBase)["_version"].__get__
_is_leaf = vars(_TensorBase)["is_leaf"].__get__
_requires_grad = vars(_TensorBase)["requires_grad"].__get__
_grad_fn = vars(_TensorBase)["grad_fn"].__get__
_detach = _TensorBase.detach
_clone = _TensorBase.clone
_to = _TensorBase.to
_is_cpu = vars(_TensorBase)["is_cpu"].__get__
_device = vars(_TensorBase)["device"].__get__
# What `same_values` compares with: the C methods and torch.equal as they were at import, so
# a submission that patches `Tensor.__eq__`, `torch.isnan` or `torch.equal` cannot make a
# changed tensor read as untouched.
_shape = vars(_TensorBase)["shape"].__get__
_dtype = vars(_TensorBase)["dtype"].__get__
_eq, _isnan = _TensorBase.eq, _TensorBase.isnan
_logical_or, _logical_and, _all = _TensorBase.logical_or, _TensorBase.logical_and, _TensorBase.all
_is_floating_point, _item = _TensorBase.is_floating_point, _TensorBase.item
_equal = torch.equal


# A subclass can answer clone/detach through __torch_function__ with values its memory does not
# hold, so any tensor the grader observes that is one fails the function. Child side: it is
# reported through an audit event to the child's hook, which tells the worker at once (a set
# kept here could be emptied by the submission).
SUBCLASS_EVENT = "inplace-grader.subclass"
_audit, _type, _plain, _vars = sys.audit, type, torch.Tensor, vars
# torch's own nn.Parameter is a subclass every model holds; it overrides nothing (its
# __torch_function__ is torch's "disabled" one), so it is trusted while that stays so.
_Parameter = torch.nn.Parameter
_PARAMETER_HOOKS = {name: _vars(_Parameter).get(name)
                    for name in ("__torch_function__", "__torch_dispatch__")}


def _trusted_type(t: torch.Tensor) -> bool:
    kind = _type(t)
    return kind is _plain or (kind is _Parameter and all(
        _vars(_Parameter).get(name) is hook for name, hook in _PARAMETER_HOOKS.items()))


def state(t: torch.Tensor) -> dict[str, Any]:
    """Pointer, version and autograd status of `t`."""
    if not _trusted_type(t):
        _audit(SUBCLASS_EVENT, f"{_type(t).__module__}.{_type(t).__qualname__}")
    grad_fn = _grad_fn(t)
    return {
        "ptr": _data_ptr(t),
        "version": _version(t),
        "is_leaf": _is_leaf(t),
        "requires_grad": _requires_grad(t),
        "grad_fn": _type(grad_fn).__name__ if grad_fn is not None else None,
        "exact_type": _type(t) is _plain,
    }


def values(t: torch.Tensor) -> torch.Tensor:
    """A detached CPU copy of `t`'s values (safe to send back to the grading process)."""
    copy = _clone(_detach(t))
    return copy if _is_cpu(copy) else _to(copy, "cpu")  # a probe makes thousands a submission


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise-equal values, NaN equal to NaN (a tensor "left untouched"). Compared where
    they are, without copies: comparing reads, it never writes either tensor."""
    if tuple(_shape(a)) != tuple(_shape(b)) or _dtype(a) != _dtype(b):
        return False
    a, b = _detach(a), _detach(b)
    if _device(a) != _device(b):
        a, b = _to(a, "cpu"), _to(b, "cpu")
    if not _is_floating_point(a):
        return bool(_equal(a, b))
    equal = _logical_or(_eq(a, b), _logical_and(_isnan(a), _isnan(b)))
    return bool(_item(_all(equal)))
