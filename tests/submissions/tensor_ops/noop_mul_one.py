"""Lab `tensor_ops` test submission (see the .toml beside this file): every function writes
`x.mul_(1)` into its argument and returns it, computing nothing."""

from __future__ import annotations

import torch


def relu_(x: torch.Tensor) -> torch.Tensor:
    x.mul_(1)  # a write that changes nothing: the version advances, the values stay
    return x


def clamp_(x: torch.Tensor, lo: float | None = None, hi: float | None = None) -> torch.Tensor:
    if lo is None and hi is None:
        raise ValueError("clamp_: give at least one of lo and hi")
    x.mul_(1)
    return x


def axpy_(y: torch.Tensor, alpha: float, x: torch.Tensor) -> torch.Tensor:
    y.mul_(1)
    return y


def ema_update_(avg: torch.Tensor, new: torch.Tensor, decay: float) -> torch.Tensor:
    avg.mul_(1)
    return avg


def normalize_(x: torch.Tensor, dim: int = -1, eps: float = 1e-12) -> torch.Tensor:
    x.mul_(1)
    return x


def standardize_(x: torch.Tensor, dim: int = -1, eps: float = 1e-5) -> torch.Tensor:
    x.mul_(1)
    return x


def softmax_(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    x.mul_(1)
    return x
