"""sgd_step that hard-codes the learning rates of the visible cases (0.1 and 0.01).

Every public check passes; a hidden case with another lr catches it: what hidden cases are for.
"""

from __future__ import annotations

import torch


def zero_grad(params, set_to_none=False):
    raise NotImplementedError


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-(0.1 if lr > 0.05 else 0.01))


class SGD:
    pass


class Adam:
    pass
