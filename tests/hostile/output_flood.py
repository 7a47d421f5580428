"""Prints 200 MB: the log is capped by the file-size limit, so the print fails; the rest is graded."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


def zero_grad(params, set_to_none=False):
    import sys
    line = "spam " * 2000 + "\n"
    for _ in range(20_000):
        sys.stdout.write(line)
