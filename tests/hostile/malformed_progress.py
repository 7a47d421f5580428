"""Writes a malformed progress line ("S x") to every pipe it holds: the worker used to raise on
it and exit, leaving the child running and failing every later job."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


def zero_grad(params, set_to_none=False):
    import os
    import stat
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, b"S x\n")
        except OSError:
            pass
    for p in params:
        if p.grad is not None:
            p.grad.detach_()
            p.grad.zero_()
