"""The labs, by name, each with its stub's file name, from whose stem `check` infers the lab
(docs/semantics.md#what-the-labs-ask).

`LAB_FILES` is light on purpose: resolving a lab name must not import torch, so the sandbox's
worker can start booting while the grading process imports the lab.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
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
    """`name` if it is a lab; else UnknownLabError naming the lab it most likely means (by its
    name or its file's, whatever the case: `Optim`, `optimizer`) and every lab there is."""
    if name in LAB_FILES:
        return name
    meant = _closest(name)
    hint = f"; did you mean {meant!r}?" if meant else ""
    raise UnknownLabError(f"unknown lab {name!r}{hint} (available: "
                          f"{', '.join(sorted(LAB_FILES))})")


def _closest(name: str) -> str | None:
    """The lab a mistyped name most likely means: its name or its file's stem, compared
    without case, exactly or as difflib finds it close."""
    import difflib

    spellings = {lab.casefold(): lab for lab in LAB_FILES}
    spellings.update({Path(file).stem.casefold(): lab for lab, file in LAB_FILES.items()})
    close = difflib.get_close_matches(name.casefold(), list(spellings), n=1, cutoff=0.6)
    return spellings[close[0]] if close else None


def lab_rubric(name: str) -> Rubric:
    """A lab's rubric read from its folder, without importing the lab (no torch): what
    usage errors are checked against before anything heavy starts."""
    return load_rubric(Path(__file__).with_name(check_lab_name(name)) / "rubric.toml")


def lab_functions(name: str) -> list[str]:
    """The lab's functions and classes in order, from its rubric (no torch): what a fast
    answer names before the lab itself is imported."""
    return list(dict.fromkeys(check_id.partition(".")[0] for check_id in lab_rubric(name).points))


def get_lab(name: str) -> Lab:
    module = importlib.import_module(f"grader.labs.{check_lab_name(name)}.judge")
    return module.LAB


# What a browser or a copy adds to a downloaded file's stem: `optimizer (1)`, `optimizer-2`,
# `optimizer_copy`, `optimizer copy 2`.
_DOWNLOAD_SUFFIX = re.compile(r"(?:[ _-]*\(\d+\)|[ _-]+\d+|[ _-]+copy(?:[ _-]*\d+)?)+$",
                              re.IGNORECASE)


def lab_of_stem(stem: str) -> str | None:
    """The lab whose stub file stem `stem` is, whatever its case and a download's suffix."""
    bare = _DOWNLOAD_SUFFIX.sub("", stem).casefold()
    for name, filename in LAB_FILES.items():
        if bare == filename.removesuffix(".py").casefold():
            return name
    return None


def infer_lab_name(path: Path) -> str | None:
    """The lab whose stub file name matches `path` (a file, or a folder holding it)."""
    if (lab := lab_of_stem(path.stem)) is not None:
        return lab
    if path.is_dir():
        for name, filename in LAB_FILES.items():
            stem = filename.removesuffix(".py")
            if any((path / f"{stem}{suffix}").exists() for suffix in (".py", ".ipynb")):
                return name
    return None
