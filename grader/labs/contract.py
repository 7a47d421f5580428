"""What a lab is made of, stated once: the names each of its modules must provide.

A lab is a folder, `grader/labs/<lab>/` or `<folder>/<lab>/` for a folder INPLACE_GRADER_LABS
names (grader/labs/__init__.py), whose name is the lab's. Each module of it runs in some
processes and not in others, which decides what it may import:

    module        runs in                  provides
    __init__.py   every process, no torch  LabPackage: FILENAME; imports nothing
    plan.py       grader, zygote, child    LabPlan: FUNCTIONS, lab_cases (the cases, as data)
    inputs.py     grader, zygote, child    the cases' tensors, `witnessed`; free form
    probes.py     zygote, child            LabProbes (grader/sandbox/probes_contract.py)
    records.py    grader                   optional: `record_type`, for Lab.record_type
    reference.py  grader                   optional: the expected values; free form
    judge.py      grader                   LabJudge: LAB, a grader.labs.base.Lab
    reproduce.py  grader                   optional: a failed check's reproducer, Lab.reproducer
    rubric.toml   grader                   points per check id (grader.models.Rubric)

("grader": the grading process; the zygote and its children are the sandbox's.)

The child may import plan.py and inputs.py (through probes.py) and nothing else of the lab: a
judge or a reference in its memory would be within the submission's reach. A lab's functions
are listed once, as its plan's FUNCTIONS; the probes' FUNCTIONS and the judge's `Lab.functions`
are that tuple. tests/labs/test_contract.py holds every discovered lab to this; the steps of
adding a lab (the stub, the solution, the catalog entries, the known submissions) are
docs/adding-a-lab.md's.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from grader.labs.base import Lab
from grader.sandbox.probes_contract import LabProbes

__all__ = ["LabJudge", "LabPackage", "LabPlan", "LabProbes"]


@runtime_checkable
class LabPackage(Protocol):
    """A lab's `__init__.py`: imported in every process when `grader.labs` finds its labs,
    so it declares and imports nothing else (no torch)."""

    # The file name of the stub students fill in (`optimizer.py`): a submission's file name
    # tells its lab (grader.labs.infer_lab_name), and an upload is looked for by it.
    FILENAME: str


@runtime_checkable
class LabPlan(Protocol):
    """A lab's `plan.py`: what is graded, as data. The child may import it (the probes do),
    so it holds no expected value; it imports only the lab's inputs.py."""

    # The lab's functions and classes in the order students meet them: the one place the
    # list is written.
    FUNCTIONS: tuple[str, ...]

    def lab_cases(self, function: str) -> list[dict[str, Any]]:
        """The cases `function` is graded on, each plain JSON-able data with a unique `id`:
        the same in every process (fixed and seeded), so cached there."""
        ...


@runtime_checkable
class LabJudge(Protocol):
    """A lab's `judge.py`, in the grading process only: what grader.labs.get_lab returns."""

    # The lab as the engine grades it: its name (the folder's), FILENAME, the plan's
    # FUNCTIONS, the checks table, the cases, the rubric's path; see grader/labs/base.py.
    LAB: Lab
