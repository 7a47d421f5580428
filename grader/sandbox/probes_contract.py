"""What the sandbox asks of a lab's probes module, and where it finds the labs' folders.

The sandbox runs each lab's probes (`grader.labs.<lab>.probes`) without importing `grader.labs`
(the layers: checks < sandbox < labs): it imports that module by its computed name
(`import_probes`, in the zygote and in each child) and uses only what `LabProbes` states. The
rest of what a lab is (its `__init__.py`, plan, judge) is grader/labs/contract.py's;
tests/labs/test_contract.py holds every lab's probes module to `LabProbes`, signatures
included, and docs/adding-a-lab.md walks through adding a lab.

A probes module runs beside student code. It imports, besides torch, `grader.checks` and
`grader.sandbox`, only its own lab's plan.py and inputs.py: a judge or a reference in the
child's memory would be within the submission's reach (child.FORGOTTEN drops any that got in).

Labs outside the package: the folders named by INPLACE_GRADER_LABS (`lab_folders`) hold lab
folders as grader/labs/ does; `grader.labs` adds them to its search path at import, so
`grader.labs.<lab>` imports from there in the grading process, the zygote and every child
(runner.child_environment passes the folders on, made absolute). They are the instructor's,
trusted like the package: limits.python_paths() lists them, so the audit hook treats code
loaded from them as the grader's and the child's file-system view lets it read them.

Nothing here imports torch: the zygote imports this module before torch is loaded.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from grader.errors import UsageError

if TYPE_CHECKING:
    from grader.sandbox.outside_meter import OutsideMeter
    from grader.sandbox.witness import Arena, Spec

LABS_VARIABLE = "INPLACE_GRADER_LABS"
DOCS = "docs/adding-a-lab.md"


@runtime_checkable
class LabProbes(Protocol):
    """A lab's probes module (`grader.labs.<lab>.probes`), as zygote.py and child.py use it.

    A module, not a class: each member is a module-level name, and each method below is a
    module-level function with the same parameters (without `self`).
    """

    # The lab's functions and classes, in the lab's order: every name a submission is graded
    # on. The child's source scans look for them (child.scan_source: the forbidden package,
    # the integrity scan) before the submission runs. Stated once, in the lab's plan.py;
    # probes.py re-exports that tuple, and the judge's `Lab.functions` is the same object.
    FUNCTIONS: tuple[str, ...]

    def warm_up(self) -> None:
        """Zygote, once, after torch is imported and before the first fork: pay each one-time
        cost here (the meters' start-up, lazy imports, the cases' inputs drawn and cached), so
        that every child inherits it instead of paying it. It must not initialise CUDA nor
        run a parallel torch op (a child forked after either could not use CUDA, or would
        hang in OpenMP), and must not import the lab's judge or reference."""
        ...

    def witnessed(self, function: str, case: dict[str, Any]) -> list[Spec]:
        """Child, before its file-system view closes (the arenas are mapped then), and the
        grading process (it is the judge's `Lab.witnessed` too): the tensors of `case` that
        `function` must update in place, as (dtype, shape), in the order `probe` hands them
        to `arena.share`. Both sides lay the arena out from this alone (witness.py), so it
        reads the case and nothing else; [] where nothing is witnessed."""
        ...

    def describe_api(self, module: ModuleType) -> dict[str, Any]:
        """Child, once per job (in its first child), right after the submission imported:
        each of FUNCTIONS described as data (checks.api.describe_module), None where the
        submission does not define it. The grading process judges the signatures from it;
        student code may already have run, so it only reads."""
        ...

    def probe(self, module: ModuleType, function: str, *, device: str,
              cases: list[dict[str, Any]], arena: Arena = ...,
              meter: OutsideMeter = ...) -> dict[str, Any]:
        """Child, once per task (one function on one device), with every limit and the audit
        hook in force: call `function` of the submission `module` on each case and record
        what happened, as plain data and CPU tensors (`{"cases": {case id: record}}`, see
        probing.run_cases); never a verdict, which is the judge's, in the grading process.
        Every call into student code goes through child.call_student; torch is reached only
        through references taken before the submission ran (probing.py). `arena` holds the
        tensors `witnessed` names (the grading process reads their final values itself);
        `meter` measures a call from outside the process (outside_meter.py), on the CPU."""
        ...


# Every member of LabProbes, for messages (a runtime Protocol does not say which one failed).
PROBES_MEMBERS = ("FUNCTIONS", "warm_up", "witnessed", "describe_api", "probe")


def import_probes(lab: str) -> LabProbes:
    """`grader.labs.<lab>.probes`, imported by its computed name (the sandbox names no lab).
    A module that lacks a member of LabProbes is the lab author's mistake: TypeError, naming
    the file and what it lacks."""
    module = importlib.import_module(f"grader.labs.{lab}.probes")
    if not isinstance(module, LabProbes):
        missing = [name for name in PROBES_MEMBERS if not hasattr(module, name)]
        raise TypeError(f"{module.__file__}: the probes module of lab {lab!r} lacks "
                        f"{', '.join(missing)}; see {DOCS}")
    return cast(LabProbes, module)


class LabFolderError(UsageError):
    """INPLACE_GRADER_LABS names something that is not a folder of labs: one line."""


def lab_folders(environ: Mapping[str, str] = os.environ) -> list[Path]:
    """The folders INPLACE_GRADER_LABS names (separated by os.pathsep), absolute and in its
    order: each holds lab folders (`<folder>/<lab>/__init__.py`, plan.py, ...), as grader/labs/
    does. Empty where it is unset. A name that is not a folder: LabFolderError."""
    folders = []
    for entry in environ.get(LABS_VARIABLE, "").split(os.pathsep):
        if not entry.strip():
            continue
        folder = Path(entry).expanduser().resolve()
        if not folder.is_dir():
            raise LabFolderError(f"{LABS_VARIABLE}={environ[LABS_VARIABLE]!r}: {entry!r} is not "
                                 f"a folder; name the folders that hold your labs, separated "
                                 f"by {os.pathsep!r} (see {DOCS})")
        folders.append(folder)
    return folders
