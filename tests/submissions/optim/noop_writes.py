"""Lab `optim` test submission (see the .toml beside this file): every function and step
writes into the caller's tensors with a write that changes nothing (`mul_(1)`, `add_(0)`,
`copy_` of a tensor onto itself)."""

from __future__ import annotations

from collections.abc import Iterable

import torch


def zero_grad(params: Iterable[torch.Tensor], set_to_none: bool = False) -> None:
    for p in params:
        if p.grad is None:
            continue
        p.grad.mul_(1)  # a write that changes nothing: the version advances, the values stay


def sgd_step(params: Iterable[torch.Tensor], lr: float) -> None:
    with torch.no_grad():
        for p in params:
            if p.grad is None:
                continue
            p.add_(0)


class SGD:
    def __init__(
        self,
        params: Iterable[torch.Tensor],
        lr: float,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        maximize: bool = False,
    ) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        self.params = list(params)
        self.lr = lr
        self.momentum = momentum
        self.dampening = dampening
        self.weight_decay = weight_decay
        self.nesterov = nesterov
        self.maximize = maximize
        self.state: dict[torch.Tensor, dict[str, torch.Tensor]] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        zero_grad(self.params, set_to_none=set_to_none)

    @torch.no_grad()
    def step(self) -> None:
        for p in self.params:
            if p.grad is None:
                continue
            p.add_(0)


class Adam:
    def __init__(
        self,
        params: Iterable[torch.Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        self.params = list(params)
        self.lr = lr
        self.betas = betas
        self.eps = eps
        self.weight_decay = weight_decay
        self.state: dict[torch.Tensor, dict[str, object]] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        zero_grad(self.params, set_to_none=set_to_none)

    @torch.no_grad()
    def step(self) -> None:
        for p in self.params:
            if p.grad is None:
                continue
            p.copy_(p)
