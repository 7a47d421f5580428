"""Asks for 8 GiB in zero_grad: the memory limit refuses it, the function fails, the grader is unharmed."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


def zero_grad(params, set_to_none=False):
    hoard = bytearray(8 * 1024**3)
    hoard[-1] = 1
