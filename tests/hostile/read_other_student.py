"""Tries to read another student's submission in the class folder."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


def zero_grad(params, set_to_none=False):
    try:
        with open("@OTHER@") as handle:
            outcome = "READ " + handle.read(20)
    except OSError as exc:
        outcome = type(exc).__name__
    raise RuntimeError("read outcome=" + outcome)
