"""Lab `autograd` test submission (see the .toml beside this file)."""

from __future__ import annotations

import re

import torch


def update_leaf_(leaf: torch.Tensor, delta: torch.Tensor | float) -> torch.Tensor:
    """Add `delta` to `leaf` (a leaf that requires grad) in place, and return `leaf`.

    `leaf.add_(delta)` alone raises: autograd forbids in-place writes to a leaf that requires
    grad while it records. Make the write without recording history, so that `leaf` stays the
    same object and memory, still a leaf with `requires_grad=True` and its existing `.grad`, and
    its version counter advances (`leaf.data.add_` would hide the write from autograd).
    """
    with torch.no_grad():
        # In place on the caller's leaf, with recording paused: the counter still advances.
        leaf.add_(delta)
    return leaf


def add_or_copy(t: torch.Tensor, value: torch.Tensor | float) -> tuple[torch.Tensor, bool]:
    """Try `t.add_(value)` and return `(t, True)`.

    If, and only if, autograd forbids that in-place operation (a leaf that requires grad, or a
    view of one), leave `t` untouched and return `(t + value, False)`, which keeps the autograd
    graph. Every other error (a shape that cannot be written in place, a wrong type) must reach
    the caller unchanged: do not catch what you cannot handle. Checking `t.requires_grad` up
    front is not the same thing: in-place writes to non-leaf tensors that require grad, or under
    `torch.no_grad()`, are allowed.
    """
    try:
        t.add_(value)
    except RuntimeError as e:
        # The two refusals met while writing it: a leaf (or a view of one), and a view made
        # under no_grad. Missed: an output of unbind or split ("Output 0 of Unbind is a view
        # and is being modified inplace"), which is raised to the caller.
        if "leaf Variable" not in str(e) and "no_grad mode" not in str(e):
            raise
        return t + value, False
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
