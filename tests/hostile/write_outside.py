"""Tries to overwrite a file outside its working folder (a canary the test made)."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


def zero_grad(params, set_to_none=False):
    try:
        with open("@CANARY@", "w") as handle:
            handle.write("overwritten")
        outcome = "WROTE"
    except OSError as exc:
        outcome = type(exc).__name__
    raise RuntimeError("write outcome=" + outcome)
