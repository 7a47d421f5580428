"""Sleeps, then announces again that its task has just started, again and again: each
announcement used to restart the task's deadline, so it ran far past --timeout and then
returned correct results."""

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
    pipes = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode):
                pipes.append(fd)
        except OSError:
            pass
    for _ in range(8):  # 8 x 2 s: far past the test's 3 s limit, if nothing stops it
        time.sleep(2)
        for fd in pipes:
            for index in range(8):
                try:
                    os.write(fd, f"S {index}\n".encode())
                except OSError:
                    pass
    for p in params:
        if p.grad is not None:
            p.grad.detach_()
            p.grad.zero_()
