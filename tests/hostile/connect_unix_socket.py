"""Connects to a path-named Unix socket outside its file-system view (a local service):
Landlock does not mediate connect, and a network namespace does not cover path sockets."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


def zero_grad(params, set_to_none=False):
    import socket
    try:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.settimeout(2)
        client.connect("@UNIX@")
        outcome = "CONNECTED"
    except OSError as exc:
        outcome = type(exc).__name__
    raise RuntimeError(f"unix outcome={outcome}.")
