"""Connects to a port the test listens on, on the host's loopback."""

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
        socket.create_connection(("127.0.0.1", @PORT@), timeout=2).close()
        outcome = "CONNECTED"
    except OSError as exc:
        outcome = "refused:" + type(exc).__name__
    raise RuntimeError("network outcome=" + outcome)
