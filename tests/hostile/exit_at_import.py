"""os._exit() at import: nothing can be graded, the score is 0 with the reason."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


import os

os._exit(3)


def zero_grad(params, set_to_none=False):
    pass
