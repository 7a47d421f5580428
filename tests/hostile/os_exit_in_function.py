"""os._exit() inside zero_grad ends the process: only zero_grad (and what calls it) is lost."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


def zero_grad(params, set_to_none=False):
    import os
    os._exit(7)
