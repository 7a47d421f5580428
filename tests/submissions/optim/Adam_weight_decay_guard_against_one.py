"""Lab `optim` test submission (see the .toml beside this file)."""

from __future__ import annotations

from collections.abc import Iterable

import torch


def zero_grad(params: Iterable[torch.Tensor], set_to_none: bool = False) -> None:
    """Reset the gradient of every tensor in `params`.

    With `set_to_none=True`, drop each gradient (`p.grad = None`): the next `backward()` then
    allocates a fresh one. Otherwise zero each existing `.grad` in place, keeping the same tensor
    object and memory (someone may hold a reference to it). A gradient produced with
    `create_graph=True` carries a `grad_fn`; detach it first, as `torch.optim` does, so zeroing it
    records no history. Tensors whose `.grad` is None stay None. Gradients that hold inf or nan
    must become exact zeros (think about what `grad * 0` gives for inf).
    """
    for p in params:
        if p.grad is None:
            continue
        if set_to_none:
            p.grad = None
            continue
        if p.grad.grad_fn is not None:
            # In place on the caller's grad: drop its history so zero_() records none.
            p.grad.detach_()
        else:
            p.grad.requires_grad_(False)
        # In place on the caller's grad: zero_ writes 0 over inf and nan alike.
        p.grad.zero_()


def sgd_step(params: Iterable[torch.Tensor], lr: float) -> None:
    """Apply one plain gradient-descent step, `p <- p - lr * p.grad`, in place.

    Skip tensors without a gradient. Write into each parameter's own memory, so that `p` stays
    the same object, storage and leaf with `requires_grad=True`, and its version counter advances.
    Record no autograd history, do not modify `p.grad`, and do not build a temporary as large as
    `p` (`lr * p.grad` is one: look at the `alpha=` argument of `Tensor.add_`).
    """
    with torch.no_grad():
        for p in params:
            if p.grad is None:
                continue
            # In place on the caller's parameter: alpha= fuses the scaling, no temporary.
            p.add_(p.grad, alpha=-lr)


class SGD:
    """Stochastic gradient descent with momentum, like `torch.optim.SGD`.

    For each parameter `p` with gradient `g` (`-g` when `maximize`):

    * weight decay: `g = g + weight_decay * p` (a *new* tensor: never modify `p.grad`);
    * momentum: on the first step `buf = clone(g)`; afterwards
      `buf = momentum * buf + (1 - dampening) * g`, updated in place;
    * nesterov: `g = g + momentum * buf`, otherwise `g = buf`;
    * update: `p = p - lr * g`, in place.

    The momentum buffer of `p` lives in `self.state[p]["momentum_buffer"]` and is the same tensor
    object from the second step on. Invalid arguments raise `ValueError`, as in `torch.optim.SGD`
    (negative lr, momentum or weight decay; nesterov without momentum or with dampening).
    `params` may be any iterable, a generator included: keep your own list of it.
    """

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
        """Reset the gradients of this optimizer's parameters (see `zero_grad`)."""
        zero_grad(self.params, set_to_none=set_to_none)

    @torch.no_grad()
    def step(self) -> None:
        """Update every parameter that has a gradient, in place."""
        for p in self.params:
            if p.grad is None:
                continue
            grad = p.grad if not self.maximize else -p.grad  # new tensor when negated
            if self.weight_decay != 0:
                grad = grad.add(p, alpha=self.weight_decay)  # new tensor: p.grad stays untouched
            if self.momentum != 0:
                state = self.state.setdefault(p, {})
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = torch.clone(grad).detach()  # our own buffer from now on
                    state["momentum_buffer"] = buf
                else:
                    # In place on state we own: the buffer keeps its identity across steps.
                    buf.mul_(self.momentum).add_(grad, alpha=1 - self.dampening)
                grad = grad.add(buf, alpha=self.momentum) if self.nesterov else buf
            # In place on the caller's parameter.
            p.add_(grad, alpha=-self.lr)


class Adam:
    """Adam without amsgrad, like `torch.optim.Adam`.

    For each parameter `p` with gradient `g` at step `t` (counting from 1):

    * weight decay: `g = g + weight_decay * p` (a new tensor);
    * `exp_avg = beta1 * exp_avg + (1 - beta1) * g` and
      `exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g * g`, both in place;
    * `p = p - lr / (1 - beta1**t) * exp_avg / (sqrt(exp_avg_sq) / sqrt(1 - beta2**t) + eps)`.

    `self.state[p]` holds `step`, `exp_avg` and `exp_avg_sq`; the two averages start as zeros on
    the first step and are the same tensor objects afterwards. Invalid arguments raise
    `ValueError`, as in `torch.optim.Adam`.
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        self.params = list(params)
        self.lr = lr
        self.betas = betas
        self.eps = eps
        self.weight_decay = weight_decay
        self.state: dict[torch.Tensor, dict[str, object]] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of this optimizer's parameters (see `zero_grad`)."""
        zero_grad(self.params, set_to_none=set_to_none)

    @torch.no_grad()
    def step(self) -> None:
        """Update every parameter that has a gradient, in place."""
        beta1, beta2 = self.betas
        for p in self.params:
            if p.grad is None:
                continue
            grad = p.grad
            if self.weight_decay != 1:
                grad = grad.add(p, alpha=self.weight_decay)  # new tensor: p.grad stays untouched
            state = self.state.setdefault(p, {})
            if not state:
                state["step"] = 0
                state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["step"] += 1
            step = state["step"]
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            # In place on state we own.
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            bias_correction1 = 1 - beta1**step
            bias_correction2_sqrt = (1 - beta2**step) ** 0.5
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(self.eps)  # new, then ours
            # In place on the caller's parameter.
            p.addcdiv_(exp_avg, denom, value=-self.lr / bias_correction1)
