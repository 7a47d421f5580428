"""An endless loop in zero_grad that swallows every exception, KeyboardInterrupt and SystemExit included."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


def zero_grad(params, set_to_none=False):
    import time
    while True:
        try:
            time.sleep(0.05)
        except BaseException:
            pass
