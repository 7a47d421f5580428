"""Lab `autograd` test submission (see the .toml beside this file): update_leaf_ and
add_or_copy write into their tensor with `mul_(1)` under no_grad, a write that changes
nothing, and return it; the other functions are right."""

from __future__ import annotations

import torch


def update_leaf_(leaf: torch.Tensor, delta: torch.Tensor | float) -> torch.Tensor:
    with torch.no_grad():
        leaf.mul_(1)  # a write that changes nothing: the version advances, the values stay
    return leaf


def add_or_copy(t: torch.Tensor, value: torch.Tensor | float) -> tuple[torch.Tensor, bool]:
    with torch.no_grad():
        t.mul_(1)
    return t, True


def buggy_block(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The block to fix: `backward()` through it raises. Do not change this function."""
    h = x @ w
    h.relu_()
    s = h.sigmoid()
    s.mul_(2)  # sigmoid saved its output for backward
    out = s.exp()
    out.add_(1)  # exp saved its output for backward
    return out.sum()


def fixed_block(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """`buggy_block` with the same value and gradients and no error at `backward()`.

    Find which in-place operations modify a tensor that autograd saved for backward, and make
    only those out of place; keep every in-place operation that is safe (the forward pass must
    create at most five new tensors the size of `x @ w`). Do not modify `x` or `w`.
    """
    h = x @ w
    h.relu_()  # safe: matmul saved x and w, not h
    s = h.sigmoid()
    s = s * 2  # out of place: sigmoid saved its output s
    out = s.exp()
    out = out + 1  # out of place: exp saved its output
    return out.sum()


def snapshot(t: torch.Tensor) -> torch.Tensor:
    """An independent copy of `t`: equal values, its own memory, no autograd link
    (`requires_grad=False`, no `grad_fn`). Later in-place changes to `t` must not reach it."""
    return t.detach().clone()


def alias(t: torch.Tensor) -> torch.Tensor:
    """A tensor that shares `t`'s memory *and* version counter but has no autograd history.

    That is what `t.detach()` returns. `t.data` shares the memory but not the counter, so
    autograd cannot see writes made through it.
    """
    return t.detach()
