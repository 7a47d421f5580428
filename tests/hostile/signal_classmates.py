"""Looks for processes it did not start (another student's grading child, the worker, the
grader) and probes each with signal 0, which harms nothing: in a batch a survivor could have
signalled the next student's child."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


def zero_grad(params, set_to_none=False):
    import os
    mine = {os.getpid()}
    reachable = 0
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in mine:
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            if parent in mine:
                continue  # its own children
            os.kill(int(name), 0)
            reachable += 1
        except (OSError, ValueError):
            pass
    raise RuntimeError(f"reachable={reachable}.")
