"""Float64 references for the optim lab, computed in the grading process.

Written out rather than calling `torch.optim` (whose first step imports torch._dynamo, about a
second): tests/labs/test_optim_reference.py holds them to torch.optim's own trajectories.
"""

from __future__ import annotations

from typing import Any

import torch

from grader.labs.optim.inputs import Case, build_params, step_grads


def sgd_trajectory(case: Case) -> list[list[torch.Tensor]]:
    """Parameters after each step, in float64, for `SGD(**case["config"])`."""
    config: dict[str, Any] = case["config"]
    lr = config["lr"]
    momentum = config.get("momentum", 0.0)
    dampening = config.get("dampening", 0.0)
    weight_decay = config.get("weight_decay", 0.0)
    nesterov = config.get("nesterov", False)
    maximize = config.get("maximize", False)
    inputs = build_params(case, "cpu")
    params = [p.detach().double() for p in inputs]
    buffers: list[torch.Tensor | None] = [None] * len(params)
    trajectory = []
    for step in range(case["steps"]):
        for index, grad in enumerate(step_grads(case, inputs, step)):
            if grad is None:
                continue
            g = grad.double()
            g = -g if maximize else g
            if weight_decay:
                g = g + weight_decay * params[index]
            if momentum:
                buf = buffers[index]
                buf = g.clone() if buf is None else momentum * buf + (1 - dampening) * g
                buffers[index] = buf
                g = g + momentum * buf if nesterov else buf
            params[index] = params[index] - lr * g
        trajectory.append([p.clone() for p in params])
    return trajectory


def adam_trajectory(case: Case) -> list[list[torch.Tensor]]:
    """Parameters after each step, in float64, for `Adam(**case["config"])` (amsgrad off)."""
    config: dict[str, Any] = case["config"]
    lr = config.get("lr", 1e-3)
    beta1, beta2 = config.get("betas", (0.9, 0.999))
    eps = config.get("eps", 1e-8)
    weight_decay = config.get("weight_decay", 0.0)
    inputs = build_params(case, "cpu")
    params = [p.detach().double() for p in inputs]
    exp_avg = [torch.zeros_like(p) for p in params]
    exp_avg_sq = [torch.zeros_like(p) for p in params]
    steps = [0] * len(params)
    trajectory = []
    for step in range(case["steps"]):
        for index, grad in enumerate(step_grads(case, inputs, step)):
            if grad is None:
                continue
            g = grad.double()
            if weight_decay:
                g = g + weight_decay * params[index]
            steps[index] += 1
            t = steps[index]
            exp_avg[index] = beta1 * exp_avg[index] + (1 - beta1) * g
            exp_avg_sq[index] = beta2 * exp_avg_sq[index] + (1 - beta2) * g * g
            denom = exp_avg_sq[index].sqrt() / (1 - beta2**t) ** 0.5 + eps
            params[index] = params[index] - lr / (1 - beta1**t) * exp_avg[index] / denom
        trajectory.append([p.clone() for p in params])
    return trajectory


def sgd_step_result(params: list[torch.Tensor], lr: float) -> list[torch.Tensor]:
    """`p - lr * p.grad` in float64 for each param with a grad (others unchanged)."""
    return [
        p.detach().double() if p.grad is None else p.detach().double() - lr * p.grad.double()
        for p in params
    ]
