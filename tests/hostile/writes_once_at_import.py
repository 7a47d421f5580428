"""Creates a file exclusively at import (honest code that expects a fresh folder) and hangs in
zero_grad: the child started for the functions after it must import the file again."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


with open("created_at_import.txt", "x") as handle:
    handle.write("once")


def zero_grad(params, set_to_none=False):
    while True:
        pass
