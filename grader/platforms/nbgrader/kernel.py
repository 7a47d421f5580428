"""Grading from a notebook's test cell: `grade_function(lab, function)` in a Jupyter kernel.

This runs in the student's kernel, both when the student runs a test cell and when
`nbgrader autograde` does. The grader never runs the student's code in the kernel's process:
it rebuilds the code the kernel ran from the kernel's input history (cells in the order they
ran; the grader's own cells and cells that do not parse left out, magics commented out, as
`grader.submission` reads a notebook) and grades that source with the sandboxed engine, as
`inplace-grader check` would on the CPU. It prints the function's feedback, with a reproducer
for each failed check to paste into a new cell, and returns the points it earned: nbgrader
takes the value of a test cell's last expression as partial credit.

What it prints reaches the student (nbgrader's feedback shows every test cell's output): never
a hidden case, nor any text of a grader cell. The hidden cases are read from the instructor's
file that the test cell names (See NOTE: [hidden cases outside the notebook] in source.py),
their results withheld until released, and an error about them names no value of them.
The kernel is the student's, though: code run in it can replace all of this (docs/nbgrader.md,
"What the kernel can promise"); `inplace-grader nbgrader verify` regrades outside it.

One sandbox worker is kept per kernel and lab, and each report is kept by what was graded, so a
notebook's test cells grade the same code once. Nothing here may write to stderr: nbgrader gives
a test cell that does no points.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import io
import json
import warnings
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grader.hidden import HiddenFile
    from grader.models import Report
    from grader.platforms.nbgrader.source import HiddenRef
    from grader.sandbox import Sandbox

HIDDEN_SOURCE = "the hidden tests of this test cell"


class NotInNotebookError(RuntimeError):
    """grade_function was called outside an IPython kernel."""


class HiddenTestsError(RuntimeError):
    """A test cell's hidden cases cannot be used at autograde. Its message reaches the
    student: it names what to run, never a value of the cases."""


def is_instructor_cell(source: str) -> bool:
    """A cell that is the grader's (cells.py), or that holds a hidden-tests region or a
    reference to hidden cases, whatever else it holds: never part of what is graded."""
    from grader.notebook_cells import is_grader_cell
    from grader.platforms.nbgrader.source import BEGIN_HIDDEN, END_HIDDEN, HIDDEN_REF_PREFIX

    return (any(marker in source for marker in (BEGIN_HIDDEN, END_HIDDEN, HIDDEN_REF_PREFIX))
            or is_grader_cell(source))


def kernel_source(cells: Iterable[str]) -> str:
    """The module a kernel's input history amounts to: each cell as `notebook_source` reads
    one, without the grader's cells (`is_instructor_cell`, asked of the cell as typed and as
    read) and without cells that do not parse (they raised a SyntaxError in the kernel and
    defined nothing)."""
    import ast

    from grader.submission import code_cell_source, join_cells

    kept = []
    for raw in cells:
        cell = code_cell_source(raw)
        try:
            ast.parse(cell)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if cell.strip() and not is_instructor_cell(raw) and not is_instructor_cell(cell):
            kept.append(cell)
    return join_cells(kept)


def find_hidden_store(ref: HiddenRef, start: Path) -> Path:
    """The instructor's cases file a test cell names, looked for from the folder above the
    notebook's upward: autograde runs it in `autograded/<student>/<assignment>/`, whose
    grandparent's parent is the course folder. The notebook's own folder, which holds the
    student's files, is never searched."""
    from grader.platforms.nbgrader.source import HiddenStoreError

    for folder in start.absolute().parents:
        candidate = folder / ref.path
        if candidate.is_file():
            return candidate
    raise HiddenStoreError(f"{ref.path} is in no folder above the notebook's: `inplace-grader "
                           "nbgrader source --hidden FILE -o COURSE/source/ASSIGNMENT` writes "
                           "it into COURSE/source/, where autograde looks for it")


def cell_hidden(hidden: str, *, lab: str, function: str, cwd: Path) -> HiddenFile | None:
    """The hidden cases of one test cell, from its HIDDEN: the part about `function` of the
    file a reference names, or the TOML that test cells held before references.

    Raises HiddenTestsError, whose message holds nothing of the cases.
    """
    from grader.engine import hidden_plan
    from grader.errors import UsageError
    from grader.hidden import parse_hidden_text
    from grader.labs import get_lab
    from grader.platforms.nbgrader.source import (
        HiddenRef,
        HiddenStoreError,
        hidden_for,
        read_hidden_store,
    )

    lab_obj = get_lab(lab)
    try:
        ref = HiddenRef.parse(hidden)
        if ref is None:
            part: HiddenFile | None = parse_hidden_text(hidden, source=HIDDEN_SOURCE)
        else:
            part = hidden_for(read_hidden_store(find_hidden_store(ref, cwd), token=ref.token),
                              lab_obj, function)
        hidden_plan(lab_obj, part)  # every mistake now, not halfway through grading
    except HiddenStoreError as exc:  # worded without the cases
        raise HiddenTestsError(str(exc)) from None
    except UsageError:  # may quote a value of the cases: not for a student's eyes
        raise HiddenTestsError(
            f"the hidden cases of {function} do not fit lab {lab}; `inplace-grader nbgrader "
            "verify COURSE ASSIGNMENT` says why") from None
    return part


class KernelGrader:
    """One sandbox per lab for the kernel's life, and the last reports by what they graded."""

    keep = 8

    def __init__(self) -> None:
        self._sandboxes: dict[str, Sandbox] = {}
        self._reports: OrderedDict[str, Report] = OrderedDict()

    def report(self, lab: str, source: str, *, hidden: HiddenFile | None, lang: str,
               search_path: Path | None) -> Report:
        from grader.engine import CheckOptions, grade_submission
        from grader.hidden import grading_key
        from grader.labs import LAB_FILES, check_lab_name
        from grader.sandbox import Sandbox
        from grader.sandbox.runner import SandboxError
        from grader.submission import Submission

        key = hashlib.sha256(json.dumps([lab, source, hidden and grading_key(hidden),
                                         lang, str(search_path)]).encode()).hexdigest()
        if key in self._reports:
            self._reports.move_to_end(key)
            return self._reports[key]
        name = Path(LAB_FILES[check_lab_name(lab)]).with_suffix(".ipynb").name
        options = CheckOptions(device="cpu", lang=lang, hidden=hidden)
        if lab not in self._sandboxes:
            self._sandboxes[lab] = Sandbox([lab])
        try:
            report = grade_submission(Submission(Path(name), source, search_path), lab=lab,
                                      options=options, sandbox=self._sandboxes[lab])
        except SandboxError:
            self._sandboxes.pop(lab).close()  # the next call starts a fresh worker
            raise
        self._reports[key] = report
        while len(self._reports) > self.keep:
            self._reports.popitem(last=False)
        return report

    def close(self) -> None:
        for sandbox in self._sandboxes.values():
            sandbox.close()
        self._sandboxes.clear()


_kernel_grader: KernelGrader | None = None


def _grader() -> KernelGrader:
    global _kernel_grader
    if _kernel_grader is None:
        _kernel_grader = KernelGrader()
        atexit.register(_kernel_grader.close)
    return _kernel_grader


def function_report(report: Report, function: str) -> Report:
    """The part of `report` about one function, with its own score."""
    checks = [c for c in report.checks if c.function == function]
    return report.model_copy(update={
        "lab": function, "checks": checks,
        "score": round(sum(c.score for c in checks), 6),
        "max_score": round(sum(c.max_score for c in checks), 6),
    })


def _input_history() -> list[str]:
    shell: Any = None
    with contextlib.suppress(ImportError):
        from IPython import get_ipython

        shell = get_ipython()
    if shell is None:
        from grader import feedback

        raise NotInNotebookError(feedback.ui("notebook_only", feedback.default_language()))
    return list(shell.history_manager.input_hist_raw[1:])


def grade_function(lab: str, function: str, *, hidden: str | None = None,
                   lang: str | None = None) -> float:
    """Grade `function` of `lab` as the kernel has defined it; print its feedback and return
    the points it earned (hidden cases counted; their results shown only once released)."""
    history = _input_history()
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        from grader import feedback
        from grader.exporters.text import feedback_text
        from grader.hidden import released
        from grader.labs import get_lab
        from grader.views import View

        functions = get_lab(lab).functions
        if function not in functions:
            raise ValueError(f"lab {lab} has no function {function!r} "
                             f"(it has {', '.join(functions)})")
        lang = lang or feedback.default_language()
        cwd = Path.cwd()
        cases = None if hidden is None else cell_hidden(hidden, lab=lab, function=function,
                                                        cwd=cwd)
        report = _grader().report(lab, kernel_source(history), hidden=cases, lang=lang,
                                  search_path=cwd)
        part = function_report(report, function)
        view = View(release=released(cases))
        print(feedback_text(part, lang=lang, view=view), end="")
        print(reproducers_text(view.of(part).report, lang=lang), end="")
    return min(part.score, part.max_score)


def reproducers_text(report: Report, *, lang: str) -> str:
    """The reproducer of each failed check the student may see, for a new cell of their
    notebook (written without an import: the kernel defines the functions)."""
    from grader import feedback

    blocks = [f"\n{feedback.reproducer_words('label_check', lang, check=check.name)}\n"
              f"{check.reproducer}" for check in report.checks
              if check.status == "failed" and check.reproducer and not check.hidden]
    return "".join(blocks)
