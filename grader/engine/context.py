"""What one submission is graded against, fixed before anything runs: options, devices, the
lab, the rubric in force and the hidden plan."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.engine.rubric import effective_rubric, hidden_plan
from grader.errors import UsageError
from grader.hidden import HiddenFile, HiddenPlan
from grader.labs import get_lab
from grader.labs.base import Lab
from grader.models import Limits, Rubric, RubricOverride
from grader.sandbox import TaskSpec


@dataclass(frozen=True)
class CheckOptions:
    device: str = "auto"
    limits: Limits = field(default_factory=Limits)
    lang: str = "en"
    rubric_override: RubricOverride | None = None
    hidden: HiddenFile | None = None
    # What the static integrity scan's findings do: "flag" (listed for the instructor, a
    # neutral line for the student) or "fail" (the functions that reach them fail).
    integrity: str = "flag"
    # Grade only these of the lab's functions (empty: all of them): a change confined to one
    # function is graded by its checks alone (bench/mutation.py grades a mutant so).
    functions: tuple[str, ...] = ()


def resolve_devices(choice: str) -> tuple[list[str], list[str]]:
    """(devices to grade on, devices reported as skipped)."""
    import torch

    has_cuda = torch.cuda.is_available()
    if choice == "cpu":
        return ["cpu"], [] if has_cuda else ["cuda"]
    if choice == "cuda":
        if not has_cuda:
            raise UsageError("--device cuda: no CUDA device is available here; use --device cpu")
        return ["cuda"], []
    if choice == "auto":
        return (["cpu", "cuda"], []) if has_cuda else (["cpu"], ["cuda"])
    raise UsageError(f"unknown device {choice!r}; choose auto, cpu or cuda")


@dataclass(frozen=True)
class GradingContext:
    """What one submission is graded against. Every step reads it; none changes it."""

    lab: Lab
    rubric: Rubric
    plan: HiddenPlan
    devices: tuple[str, ...]
    skipped: tuple[str, ...]
    options: CheckOptions

    @classmethod
    def of(cls, lab: str, options: CheckOptions) -> GradingContext:
        """The context for grading `lab` with `options` (imports the lab: torch)."""
        lab_obj = get_lab(lab)
        devices, skipped = resolve_devices(options.device)
        rubric = effective_rubric(lab_obj, options.rubric_override)
        plan = hidden_plan(lab_obj, options.hidden)
        if options.functions:
            lab_obj = lab_obj.only(options.functions)
        return cls(lab_obj, rubric, plan, tuple(devices), tuple(skipped), options)

    @property
    def lang(self) -> str:
        return self.options.lang

    def units(self) -> list[tuple[str, str, bool]]:
        """(function, device, whether this unit carries the function's once-per-submission
        checks) in grading order: the first device does, so a function's api and policy
        points are counted once."""
        return [(function, device, index == 0) for function in self.lab.functions
                for index, device in enumerate(self.devices)]

    def tasks(self) -> tuple[list[TaskSpec], list[TaskSpec]]:
        """(the lab's own tasks, the hidden cases' tasks), one per function and device.
        The caller's memory is read back (witnessed) on the CPU only."""
        lab = self.lab

        def witness(device: str) -> Any:
            return lab.witnessed if device == "cpu" else None

        visible = [TaskSpec(function, device, lab.cases(function), witness=witness(device))
                   for function in lab.functions for device in self.devices]
        secret = [TaskSpec(function, device, [v.run_case for v in self.plan.for_function(function)],
                           private=True, witness=witness(device))
                  for function in lab.functions if self.plan.for_function(function)
                  for device in self.devices]
        return visible, secret
