"""sgd_step computes `lr * p.grad` into a buffer allocated once at import and reused: the
allocation happens before any call, so a meter that counts only allocations made during the
call saw no temporary."""

from __future__ import annotations

import torch

_pool = torch.empty(4 * 1024 * 1024, dtype=torch.float64)  # room for any parameter here


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is None:
                continue
            scratch = _pool.view(p.dtype)[:p.numel()].view(p.shape)
            torch.mul(p.grad, lr, out=scratch)  # a full-size temporary, kept at module level
            p.sub_(scratch)


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
