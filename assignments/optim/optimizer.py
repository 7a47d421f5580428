"""Lab `optim`: the optimizer's in-place contract.

`optimizer.zero_grad()` and `optimizer.step()` change your model's parameters without any
assignment in your training loop. They can, because the optimizer holds references to the very
parameter tensors the model holds, and changes their memory *in place*.

In this lab you write those operations yourself:

* `zero_grad` resets gradients, keeping each `.grad` tensor object (or dropping it).
* `sgd_step` applies `p <- p - lr * p.grad` into each parameter's own memory.
* `SGD` and `Adam` do the same with state (momentum buffers, moment estimates) that they own
  and update in place from step to step.

Rules of the game (the grader checks every one):

* A parameter must stay the *same object* with the *same storage*; its version counter must
  advance so autograd can see the write (`p.data = ...` and `p.data.add_(...)` hide it).
* A leaf that requires grad cannot be modified in place while autograd is recording: wrap the
  update in `torch.no_grad()`.
* Never modify `p.grad` in a step: it belongs to the caller (weight decay goes into a new tensor).
* Do not use `torch.optim`: the point is to build it.

Run `inplace-grader check optimizer.py` to see which property holds and which does not.
"""

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
    # YOUR CODE HERE
    raise NotImplementedError


def sgd_step(params: Iterable[torch.Tensor], lr: float) -> None:
    """Apply one plain gradient-descent step, `p <- p - lr * p.grad`, in place.

    Skip tensors without a gradient. Write into each parameter's own memory, so that `p` stays
    the same object, storage and leaf with `requires_grad=True`, and its version counter advances.
    Record no autograd history, do not modify `p.grad`, and do not build a temporary as large as
    `p` (`lr * p.grad` is one: look at the `alpha=` argument of `Tensor.add_`).
    """
    # YOUR CODE HERE
    raise NotImplementedError


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
        # YOUR CODE HERE
        raise NotImplementedError

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of this optimizer's parameters (see `zero_grad`)."""
        # YOUR CODE HERE
        raise NotImplementedError

    @torch.no_grad()
    def step(self) -> None:
        """Update every parameter that has a gradient, in place."""
        # YOUR CODE HERE
        raise NotImplementedError


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
        # YOUR CODE HERE
        raise NotImplementedError

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of this optimizer's parameters (see `zero_grad`)."""
        # YOUR CODE HERE
        raise NotImplementedError

    @torch.no_grad()
    def step(self) -> None:
        """Update every parameter that has a gradient, in place."""
        # YOUR CODE HERE
        raise NotImplementedError
