"""The float64 references agree with torch.optim itself, on every configuration the lab grades."""

from __future__ import annotations

import pytest
import torch

from grader.labs.optim import reference
from grader.labs.optim.inputs import build_params, step_grads
from grader.labs.optim.plan import lab_cases


def torch_trajectory(case: dict) -> list[list[torch.Tensor]]:
    params = [p.detach().double().requires_grad_() for p in build_params(case, "cpu")]
    config = {k: tuple(v) if isinstance(v, list) else v for k, v in case["config"].items()}
    optimizer = getattr(torch.optim, case["class"])(params, **config)
    trajectory = []
    for step in range(case["steps"]):
        for p, g in zip(params, step_grads(case, build_params(case, "cpu"), step), strict=True):
            p.grad = None if g is None else g.double()
        optimizer.step()
        trajectory.append([p.detach().clone() for p in params])
    return trajectory


CASES = [c for cls in ("SGD", "Adam") for c in lab_cases(cls) if c["probe"] == "trajectory"]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['class']}-{c['id']}" for c in CASES])
def test_reference_matches_torch_optim(case: dict) -> None:
    build = reference.sgd_trajectory if case["class"] == "SGD" else reference.adam_trajectory
    ours = build(case)
    theirs = torch_trajectory(case)
    for step, (mine, torch_params) in enumerate(zip(ours, theirs, strict=True)):
        for a, b in zip(mine, torch_params, strict=True):
            assert torch.allclose(a, b, rtol=0, atol=1e-12), f"step {step + 1}"
