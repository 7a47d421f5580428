"""Writes 200 MB into its working folder: the file-size limit stops the write (EFBIG; Python ignores SIGXFSZ)."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


def zero_grad(params, set_to_none=False):
    chunk = b"x" * (1 << 20)
    with open("big.bin", "wb") as handle:
        for _ in range(200):
            handle.write(chunk)
