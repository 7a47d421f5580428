"""os._exit() inside zero_grad ends the process: only zero_grad (and what calls it) is lost."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


class SGD:
    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, maximize=False):
        raise NotImplementedError


class Adam:
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        raise NotImplementedError


def zero_grad(params, set_to_none=False):
    import os
    os._exit(7)
