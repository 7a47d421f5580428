"""sys.exit() inside zero_grad: that call fails, the process and the rest of the lab go on."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


def zero_grad(params, set_to_none=False):
    import sys
    sys.exit(0)
