"""The labs, by name, each with its stub's file name, from whose stem `check` infers the lab
(docs/semantics.md#what-the-labs-ask).

A lab is a folder: one here (grader/labs/<lab>/), or one in a folder that INPLACE_GRADER_LABS
names (a course's own labs, kept outside the package: grader/sandbox/probes_contract.py
`lab_folders`), which is added to this package's search path at import, so that
`grader.labs.<lab>` imports from there in every process. What a lab's folder holds is
grader/labs/contract.py's; docs/adding-a-lab.md walks through adding one.

`LAB_FILES` is light on purpose: resolving a lab name must not import torch, so the sandbox's
worker can start booting while the grading process imports the lab.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
from pathlib import Path

from grader.errors import UsageError
from grader.labs.base import Lab, load_rubric
from grader.models import Rubric
from grader.sandbox.probes_contract import DOCS, LabFolderError, lab_folders


def _discover() -> tuple[dict[str, str], dict[str, Path]]:
    """Every lab folder on this package's path, by name, with its stub's file name (the
    `FILENAME` its `__init__.py` declares) and its folder: a new lab is a new folder,
    registered nowhere else. The labs' own modules are not imported here (no torch)."""
    files: dict[str, str] = {}
    folders: dict[str, Path] = {}
    for module in pkgutil.iter_modules(__path__):  # one per name: the first folder's
        if not module.ispkg:
            continue
        package = importlib.import_module(f"{__name__}.{module.name}")
        folder = Path(str(package.__file__)).parent
        for entry in __path__:  # a lab of the same name further on would be shadowed
            other = Path(entry) / module.name / "__init__.py"
            if other.parent != folder and other.is_file():
                raise LabFolderError(f"{other.parent}: a lab named {module.name!r} is already "
                                     f"in {folder.parent}; rename the folder (its name is the "
                                     f"lab's)")
        if not isinstance(getattr(package, "FILENAME", None), str):
            raise LabFolderError(f"{package.__file__}: declares no FILENAME (the file name of "
                                 f"the lab's stub, e.g. FILENAME = \"{module.name}.py\"); "
                                 f"see {DOCS}")
        files[module.name], folders[module.name] = package.FILENAME, folder
    return files, folders


def _load() -> tuple[dict[str, str], dict[str, Path], LabFolderError | None]:
    """The labs, with the folders INPLACE_GRADER_LABS names; what is wrong with those, if
    anything, is kept for `check_lab_folders` (the package's own labs stay available, so
    that importing the grader never fails on it)."""
    own = len(__path__)
    try:
        __path__.extend(str(folder) for folder in lab_folders(os.environ)
                        if str(folder) not in __path__)
        return (*_discover(), None)
    except LabFolderError as problem:
        del __path__[own:]
        return (*_discover(), problem)


LAB_FILES: dict[str, str]
_FOLDERS: dict[str, Path]
LAB_FILES, _FOLDERS, _FOLDER_PROBLEM = _load()


class UnknownLabError(UsageError):
    pass


def check_lab_folders() -> None:
    """Raise LabFolderError (a usage error) if INPLACE_GRADER_LABS names something that is
    not a folder of labs, or a lab that is not one: checked before any lab is looked up."""
    if _FOLDER_PROBLEM is not None:
        raise LabFolderError(str(_FOLDER_PROBLEM))


def check_lab_name(name: str) -> str:
    """`name` if it is a lab; else UnknownLabError naming the lab it most likely means (by its
    name or its file's, whatever the case: `Optim`, `optimizer`) and every lab there is."""
    check_lab_folders()
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
    return load_rubric(lab_folder(name) / "rubric.toml")


def lab_folder(name: str) -> Path:
    """The folder of lab `name`: grader/labs/<lab>, or one in an INPLACE_GRADER_LABS folder."""
    return _FOLDERS[check_lab_name(name)]


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
