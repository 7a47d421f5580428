"""Starts a detached daemon (its own session) running sleep: it is killed when grading ends."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


import subprocess

subprocess.Popen(["sleep", "313.@RUN@"], start_new_session=True)


def zero_grad(params, set_to_none=False):
    for p in params:
        if p.grad is not None:
            p.grad.detach_()
            p.grad.zero_()
