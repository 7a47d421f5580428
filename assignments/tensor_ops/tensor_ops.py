"""Lab `tensor_ops`: in-place tensor utilities that write into the caller's memory.

An in-place utility is a promise to the caller: "I change *your* tensor". Every function here
modifies its first argument in place and returns that same object. The grader checks that

* the returned tensor *is* the argument (`out is x`), with the same memory;
* the writes reach the caller's memory even when `x` is a view (a transpose, a strided slice):
  the caller's base tensor must see the new values;
* the version counter advances (`x.data = ...` and numpy detours hide the write from autograd);
* values match a float64 reference in float32, float64, float16 and bfloat16, for empty and
  0-dim tensors and extreme values;
* no temporary as large as `x` is created. A reduction-sized temporary (one value per row) is
  fine; `x * 2`, `x < 0`, `x.contiguous()` (on a view), `x.view(-1)` copies are not.

Tips: most operations have an in-place form ending in `_` (`clamp_`, `add_`, `mul_`, `div_`,
`sub_`, `exp_`, `lerp_`), many take `alpha=`, and reductions take `keepdim=True` so their result
broadcasts back against `x`.

Run `inplace-grader check tensor_ops.py` to see which property holds and which does not.
"""

from __future__ import annotations

import torch


def relu_(x: torch.Tensor) -> torch.Tensor:
    """Replace every negative element of `x` by 0, in place, like `torch.relu`; return `x`.

    NaN stays NaN. Avoid `x[x < 0] = 0`: the mask `x < 0` is a new tensor as large as `x`.
    """
    # YOUR CODE HERE
    raise NotImplementedError


def clamp_(x: torch.Tensor, lo: float | None = None, hi: float | None = None) -> torch.Tensor:
    """Limit `x` to `[lo, hi]` in place, like `torch.clamp`; return `x`.

    Either bound may be None (no limit on that side), but not both: like `torch.clamp`, raise
    an error when neither is given.
    """
    # YOUR CODE HERE
    raise NotImplementedError


def axpy_(y: torch.Tensor, alpha: float, x: torch.Tensor) -> torch.Tensor:
    """`y += alpha * x` in place, `x` broadcastable to `y`; return `y`.

    `alpha * x` is a full-size temporary: look at the `alpha=` argument of `Tensor.add_`.
    `x` must not change.
    """
    # YOUR CODE HERE
    raise NotImplementedError


def ema_update_(avg: torch.Tensor, new: torch.Tensor, decay: float) -> torch.Tensor:
    """Exponential moving average in place: `avg = decay * avg + (1 - decay) * new`; return `avg`.

    `new` must not change. `Tensor.lerp_` does exactly this in one step.
    """
    # YOUR CODE HERE
    raise NotImplementedError


def normalize_(x: torch.Tensor, dim: int = -1, eps: float = 1e-12) -> torch.Tensor:
    """Divide `x` by its L2 norm along `dim` in place, like
    `torch.nn.functional.normalize(x, p=2, dim=dim, eps=eps)`; return `x`.

    The norm is clamped below by `eps`, so a row of zeros stays zeros. Compute the norm with
    `keepdim=True` (a reduction-sized temporary) and divide in place.
    """
    # YOUR CODE HERE
    raise NotImplementedError


def standardize_(x: torch.Tensor, dim: int = -1, eps: float = 1e-5) -> torch.Tensor:
    """`(x - mean) / sqrt(var + eps)` along `dim` in place, with the *biased* variance (divide
    by n, as `torch.nn.functional.layer_norm` does); return `x`.
    """
    # YOUR CODE HERE
    raise NotImplementedError


def softmax_(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax along `dim` in place, like `torch.softmax`; return `x`.

    Numerically stable: subtract the maximum along `dim` before `exp`, or large inputs (1e4)
    overflow to inf and give nan.
    """
    # YOUR CODE HERE
    raise NotImplementedError
