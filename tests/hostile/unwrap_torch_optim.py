"""Uses torch.optim's SGD without being recorded: reaches the module by a computed name (no
static trace) and calls the original, unwrapped step through `__wrapped__`, or else through the
wrapper's closure."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


def zero_grad(params, set_to_none=False):
    for p in params:
        if p.grad is None:
            continue
        if set_to_none:
            p.grad = None
            continue
        if p.grad.grad_fn is not None:
            p.grad.detach_()
        else:
            p.grad.requires_grad_(False)
        p.grad.zero_()


_optim = getattr(torch, "op" + "tim")


def _original(function):
    inner = getattr(function, "__wrapped__", None)
    if inner is not None:
        return inner
    for cell in function.__closure__ or ():
        if callable(cell.cell_contents) and getattr(cell.cell_contents, "__name__", "") == \
                function.__name__:
            return cell.cell_contents
    return function


class SGD:
    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, maximize=False):
        self._inner = _optim.SGD(params, lr=lr, momentum=momentum, dampening=dampening,
                                 weight_decay=weight_decay, nesterov=nesterov,
                                 maximize=maximize)
        self.state = self._inner.state

    def zero_grad(self, set_to_none=True):
        self._inner.zero_grad(set_to_none=set_to_none)

    def step(self):
        _original(type(self._inner).step)(self._inner)
