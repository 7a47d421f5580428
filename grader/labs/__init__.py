"""The labs, by name. A lab's name is also its stub's file stem (SPEC).

`LAB_FILES` is light on purpose: resolving a lab name must not import torch, so the sandbox's
worker can start booting while the grading process imports the lab.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from grader.labs.base import Lab

LAB_FILES: dict[str, str] = {
    "optim": "optimizer.py",
    "tensor_ops": "tensor_ops.py",
    "autograd": "autograd_inplace.py",
}


class UnknownLabError(ValueError):
    pass


def check_lab_name(name: str) -> str:
    if name not in LAB_FILES:
        raise UnknownLabError(f"unknown lab {name!r}; available: {', '.join(sorted(LAB_FILES))}")
    return name


def get_lab(name: str) -> Lab:
    module = importlib.import_module(f"grader.labs.{check_lab_name(name)}.judge")
    return module.LAB


def infer_lab_name(path: Path) -> str | None:
    """The lab whose stub file name matches `path` (a file, or a folder holding it)."""
    for name, filename in LAB_FILES.items():
        stem = filename.removesuffix(".py")
        if path.stem == stem or (path.is_dir() and any(
                (path / f"{stem}{suffix}").exists() for suffix in (".py", ".ipynb"))):
            return name
    return None
