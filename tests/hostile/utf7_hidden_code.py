# coding: utf-7
"""Hides a statement in a UTF-7 coding line's encoding (read as UTF-8 it is a comment). The
grader reads the file as Python does, the coding line honoured, and the child runs that text:
the scans see the statement and it exits at import, as the interpreter would."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)

# +AAo-raise SystemExit(0)

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
