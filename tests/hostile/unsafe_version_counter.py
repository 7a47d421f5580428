"""sgd_step writes through `p.data` (autograd cannot see that write: the version counter stays)
and then sets the version counter by hand with torch._C._autograd._unsafe_set_version_counter, so the version check would pass."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    for p in params:
        if p.grad is not None:
            p.data.add_(p.grad, alpha=-lr)
            torch._C._autograd._unsafe_set_version_counter(p, p._version + 1)


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
