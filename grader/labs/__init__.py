"""The labs, by name. A lab's name is also its stub's file stem (SPEC).

`LAB_FILES` is light on purpose: resolving a lab name must not import torch, so the sandbox's
worker can start booting while the grading process imports the lab.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from grader.errors import UsageError
from grader.labs.base import Lab, load_rubric
from grader.models import Rubric


def _discover() -> dict[str, str]:
    """Every lab folder under grader/labs, by name, with its stub's file name (the `FILENAME`
    its `__init__.py` declares): a new lab is a new folder, registered nowhere else. The
    packages' own modules are not imported here (no torch)."""
    found = {}
    for module in pkgutil.iter_modules(__path__):
        if module.ispkg:
            found[module.name] = importlib.import_module(f"{__name__}.{module.name}").FILENAME
    return found


LAB_FILES: dict[str, str] = _discover()


class UnknownLabError(UsageError):
    pass


def check_lab_name(name: str) -> str:
    if name not in LAB_FILES:
        raise UnknownLabError(f"unknown lab {name!r}; available: {', '.join(sorted(LAB_FILES))}")
    return name


def lab_rubric(name: str) -> Rubric:
    """A lab's rubric read from its folder, without importing the lab (no torch): what
    usage errors are checked against before anything heavy starts."""
    return load_rubric(Path(__file__).with_name(check_lab_name(name)) / "rubric.toml")


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
