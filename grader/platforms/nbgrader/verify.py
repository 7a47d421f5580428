"""`inplace-grader nbgrader verify COURSE ASSIGNMENT`: the points nbgrader recorded, checked
outside the kernels that produced them.

`nbgrader autograde` takes a test cell's points from the student's own kernel, where the
student's code ran first and could have replaced `grade_function` or what it prints. Here each
submitted notebook is regraded in the grader's sandbox as an honest kernel would have graded it
(nbgrader's locked cells restored from the instructor's source notebook, the code cells in order,
`kernel_source`'s filter, the hidden cases from the instructor's files: the source notebook and
the cases file its test cells name, never the student's copy), and each test cell's points are
compared with the auto score in nbgrader's gradebook, which is only read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from nbformat import NotebookNode

    from grader.hidden import HiddenFile
    from grader.sandbox import Sandbox
    from grader.submission import Submission

GRADEBOOK = "gradebook.db"  # nbgrader's default CourseDirectory.db_url, in the course folder
ERROR_CHARS = 300  # of why a notebook could not be regraded (nbformat's errors run long)
TOLERANCE = 1e-6  # points: what a float's round trip through a cell's printed value can lose


class VerifyError(UsageError):
    """The course cannot be verified (no gradebook, an unknown assignment, no source notebook):
    one line, ending with what to run."""


@dataclass(frozen=True)
class TestCell:
    """One autograded test cell of the instructor's source notebook."""

    __test__ = False  # not a pytest class

    notebook: str  # nbgrader's notebook id: the file's stem
    grade_id: str
    lab: str
    function: str
    hidden: HiddenFile | None  # this function's hidden cases, from the instructor's files


@dataclass(frozen=True)
class CellDifference:
    notebook: str
    grade_id: str
    function: str
    recorded: float | None  # None: nbgrader recorded no points (not autograded)
    regraded: float


@dataclass(frozen=True)
class StudentResult:
    student: str
    differences: tuple[CellDifference, ...] = ()
    error: str | None = None  # why a notebook could not be regraded

    @property
    def differs(self) -> bool:
        return bool(self.differences) or self.error is not None

    def line(self) -> str:
        """One line for a student whose points differ."""
        student = _printable(self.student)
        if self.error is not None:
            return f"{student}: {_printable(' '.join(self.error.split()))[:ERROR_CHARS]}"
        parts, notebook = [], None
        for d in self.differences:
            where = d.grade_id if d.notebook == notebook else f"{d.notebook}.ipynb {d.grade_id}"
            named = "" if d.grade_id == f"test_{d.function}" else f" ({d.function})"
            parts.append(f"{where}{named} recorded {_points(d.recorded)}, "
                         f"regraded {_points(d.regraded)}")
            notebook = d.notebook
        return f"{student}: " + "; ".join(parts)


@dataclass(frozen=True)
class Verification:
    assignment: str
    students: tuple[StudentResult, ...] = field(default=())

    @property
    def differing(self) -> list[StudentResult]:
        return [s for s in self.students if s.differs]

    @property
    def return_code(self) -> ExitCode:
        return ExitCode.FAILED if self.differing else ExitCode.OK

    def summary(self) -> str:
        count = len(self.students)
        regraded = f"{self.assignment}: {count} student{'s' if count != 1 else ''} regraded"
        if not self.differing:
            return f"{regraded}; the points nbgrader recorded match"
        differ = len(self.differing)
        return (f"{regraded}; {differ} differ{'s' if differ == 1 else ''} from the points "
                "nbgrader recorded "
                "(look at their notebooks; `inplace-grader grade` gives the sandbox's scores)")


def _printable(text: str) -> str:
    """A name or message as one printable line: the file system and nbformat give anything."""
    from grader.student_files import display_name

    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in display_name(text))


def _points(value: float | None) -> str:
    return "nothing" if value is None else str(round(value, 6)).removesuffix(".0")


def verify_assignment(course: Path, assignment: str, *, students: Sequence[str] = (),
                      on_student: Callable[[StudentResult], None] | None = None
                      ) -> Verification:
    """Regrade every student's submitted notebooks of `assignment` (only `students`, if given)
    and compare each test cell's points with nbgrader's gradebook. `on_student` hears each
    student as soon as they are regraded. Raises VerifyError for a usage problem."""
    from grader.sandbox.runner import SandboxError

    notebooks, recorded = recorded_points(course, assignment)
    cells = source_test_cells(course, assignment, notebooks=notebooks)
    submitted = course / "submitted"
    folders = sorted(submitted.iterdir()) if submitted.is_dir() else []
    found = set(recorded) | {folder.name for folder in folders
                             if (folder / assignment).is_dir()}
    unknown = sorted(set(students) - found)
    if unknown:
        known = ", ".join(sorted(found)[:10]) + (", ..." if len(found) > 10 else "")
        raise VerifyError(f"{course}: no submission of {assignment} by {', '.join(unknown)} "
                          f"in submitted/ or the gradebook (it has: {known or 'none'})")
    chosen = sorted(set(students) if students else found)
    sources = {notebook: _read_notebook(_source_path(course, assignment, notebook))
               for notebook in {cell.notebook for cell in cells}}
    results: list[StudentResult] = []
    with _Workers(sorted({cell.lab for cell in cells})) as workers:
        for student in chosen:
            folder = submitted / student / assignment
            try:
                result = _verify_student(student, folder, cells, sources,
                                         recorded.get(student, {}), workers=workers)
            except SandboxError as exc:  # the next student gets a fresh worker
                workers.reset()
                result = StudentResult(student, error=f"the sandbox failed ({exc})")
            results.append(result)
            if on_student is not None:
                on_student(result)
    return Verification(assignment, tuple(results))


class _Workers:
    """The sandbox, started when the first notebook is regraded, restarted after a failure."""

    def __init__(self, labs: list[str]) -> None:
        self.labs = labs
        self._sandbox: Sandbox | None = None

    def get(self) -> Sandbox:
        from grader.sandbox import Sandbox

        if self._sandbox is None:
            self._sandbox = Sandbox(self.labs)
        return self._sandbox

    def reset(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def __enter__(self) -> _Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.reset()


def _verify_student(student: str, folder: Path, cells: Sequence[TestCell],
                    sources: Mapping[str, NotebookNode], recorded: Mapping[tuple[str, str],
                    float | None], *, workers: _Workers) -> StudentResult:
    differences: list[CellDifference] = []
    for notebook in sorted({cell.notebook for cell in cells}):
        mine = [cell for cell in cells if cell.notebook == notebook]
        path = folder / f"{notebook}.ipynb"
        if not path.is_file():  # nbgrader scores a missing notebook 0
            regraded = {cell.grade_id: 0.0 for cell in mine}
            if all(recorded.get((notebook, c.grade_id)) in (None, 0) for c in mine):
                continue
        else:
            try:
                submission = notebook_submission(path, sources[notebook])
            except UsageError as exc:  # the student's file: a line, never the run's end
                return StudentResult(student, error=f"{path.name} cannot be regraded ({exc})")
            except Exception as exc:  # any bytes in a notebook give a line, not a crash
                return StudentResult(student, error=f"{path.name} cannot be read "
                                                    f"({type(exc).__name__}: {exc})")
            regraded = cell_points(submission, mine, sandbox=workers.get())
        for cell in mine:
            got = recorded.get((notebook, cell.grade_id))
            points = regraded[cell.grade_id]
            if got is None or not math.isclose(got, points, rel_tol=0, abs_tol=TOLERANCE):
                differences.append(CellDifference(notebook, cell.grade_id, cell.function,
                                                  got, points))
    return StudentResult(student, tuple(differences))


def regrade_notebook(path: Path, cells: Sequence[TestCell], source: NotebookNode, *,
                     sandbox: Sandbox) -> dict[str, float]:
    """The points an honest kernel gives each of `cells` for the notebook at `path`."""
    return cell_points(notebook_submission(path, source), cells, sandbox=sandbox)


def notebook_submission(path: Path, source: NotebookNode) -> Submission:
    """What an honest kernel grades of the notebook at `path` at autograde: its cells as
    nbgrader runs them (`restored` from the instructor's `source`), the code cells in order,
    each as `kernel_source` keeps it. Raises SubmissionError for a link out of the student's
    folder or a notebook too large to grade, OSError for a file that is not a regular one,
    and whatever nbformat raises for one it cannot read."""
    import nbformat

    from grader.platforms.nbgrader.kernel import kernel_source
    from grader.student_files import link_problem, read_bytes
    from grader.submission import NOTEBOOK_LIMIT, SOURCE_LIMIT, Submission, SubmissionError

    if problem := link_problem(path, within=path.parent):
        raise SubmissionError(problem)
    try:
        data = read_bytes(path.resolve(), limit=NOTEBOOK_LIMIT)
    except ValueError:
        raise SubmissionError(f"over {NOTEBOOK_LIMIT // 1024**2} MiB; the grader reads at "
                              "most that much notebook") from None
    notebook = restored(nbformat.reads(data.decode("utf-8-sig"), as_version=4), source)
    code = kernel_source(_code_cells(notebook))
    if len(code.encode()) > SOURCE_LIMIT:
        raise SubmissionError(f"its code is over {SOURCE_LIMIT // 1024**2} MiB")
    return Submission(path, code, path.parent.resolve())


def cell_points(submission: Submission, cells: Sequence[TestCell], *, sandbox: Sandbox
                ) -> dict[str, float]:
    """Each test cell's points, as `grade_function` computes them: the function's part of the
    report, never above what it can earn. One grading per lab, its hidden cases `merged`."""
    from grader.engine import CheckOptions, grade_submission
    from grader.platforms.nbgrader.kernel import function_report

    points: dict[str, float] = {}
    for lab in sorted({cell.lab for cell in cells}):
        mine = [cell for cell in cells if cell.lab == lab]
        options = CheckOptions(device="cpu", hidden=merged(lab, [c.hidden for c in mine]))
        report = grade_submission(submission, lab=lab, options=options, sandbox=sandbox)
        for cell in mine:
            part = function_report(report, cell.function)
            points[cell.grade_id] = min(part.score, part.max_score)
    return points


def restored(notebook: NotebookNode, source: NotebookNode) -> NotebookNode:
    """The notebook as `nbgrader autograde` runs it: each cell that has a grade id of the
    source notebook gets that cell's type, and its source too where that cell is locked
    (nbgrader's OverwriteCells). Cells the student added stay as they are."""
    import copy

    instructor = {_meta(c).get("grade_id"): c for c in source.cells if _meta(c).get("grade_id")}
    notebook = copy.deepcopy(notebook)
    seen: set[str] = set()
    for cell in notebook.get("cells", []):
        grade_id = _meta(cell).get("grade_id")
        if not isinstance(grade_id, str) or grade_id not in instructor or grade_id in seen:
            continue  # not the instructor's, or a duplicate id (nbgrader drops those)
        seen.add(grade_id)
        original = instructor[grade_id]
        cell["cell_type"] = original.cell_type
        if _meta(original).get("locked"):
            cell["source"] = original.source
    return notebook


def merged(lab: str, parts: Iterable[HiddenFile | None]) -> HiddenFile | None:
    """One hidden-cases file holding the cases and `hide` patterns of every part: graded at
    once, each function's checks see only its own cases, as in its own test cell."""
    from grader.hidden import HiddenFile

    present = [part for part in parts if part is not None]
    if not present:
        return None
    hide = list(dict.fromkeys(p for part in present for p in part.hide))
    cases = [case.model_dump() for part in present for case in part.cases]
    return HiddenFile.model_validate({"lab": lab, "hide": hide, "case": cases})


def _meta(cell: Any) -> dict[str, Any]:
    """A cell's nbgrader metadata; {} for anything but a mapping (a student's file may hold
    any JSON there)."""
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    meta = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return meta if isinstance(meta, dict) else {}


def _code_cells(notebook: NotebookNode) -> list[str]:
    """The code cells' sources, in order, as the kernel receives them."""
    sources = []
    for cell in notebook.get("cells", []):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else source
            if isinstance(source, str):
                sources.append(source)
    return sources


def _read_notebook(path: Path) -> NotebookNode:
    import nbformat

    return nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)


def _source_path(course: Path, assignment: str, notebook: str) -> Path:
    return course / "source" / assignment / f"{notebook}.ipynb"


def source_test_cells(course: Path, assignment: str, *, notebooks: Sequence[str]
                      ) -> list[TestCell]:
    """The test cells of the instructor's source notebooks that call `grade_function`, each
    with its function's hidden cases (validated against its lab: a mistake is a VerifyError
    that may quote them, for the instructor)."""
    from grader.engine import hidden_plan
    from grader.hidden import parse_hidden_text
    from grader.labs import get_lab
    from grader.platforms.nbgrader.source import (
        HiddenRef,
        grade_call,
        hidden_for,
        read_hidden_store,
    )

    cells: list[TestCell] = []
    for notebook in notebooks:
        path = _source_path(course, assignment, notebook)
        try:
            source = _read_notebook(path)
        except FileNotFoundError:
            raise VerifyError(f"{path}: no source notebook; verify regrades with the "
                              "instructor's own copy, in source/ASSIGNMENT/") from None
        except Exception as exc:
            raise VerifyError(f"{path}: not a readable notebook ({exc})") from exc
        for cell in source.cells:
            meta = _meta(cell)
            if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution"):
                continue
            call = grade_call(str(cell.source))
            if call is None:
                continue  # a test cell of the instructor's own: not the grader's to redo
            where = f"{path}: {meta.get('grade_id')}"
            try:
                lab = get_lab(call.lab)
                hidden = None
                if call.hidden is not None:
                    ref = HiddenRef.parse(call.hidden)
                    hidden = (parse_hidden_text(call.hidden, source=where) if ref is None
                              else hidden_for(read_hidden_store(course / ref.path,
                                                                token=ref.token),
                                              lab, call.function))
                hidden_plan(lab, hidden)
            except UsageError as exc:
                raise VerifyError(f"{where}: {exc}") from exc
            if call.function not in lab.functions:
                raise VerifyError(f"{where}: lab {call.lab} has no function {call.function!r}")
            cells.append(TestCell(notebook, str(meta["grade_id"]), call.lab, call.function,
                                  hidden))
    if not cells:
        raise VerifyError(f"{course / 'source' / assignment}: no test cell calls "
                          "grade_function; `inplace-grader nbgrader source` writes them")
    return cells


def _gradebook(course: Path) -> Any:
    """nbgrader's gradebook of the course, opened read-only (nothing here writes to it)."""
    from urllib.parse import quote

    try:
        from nbgrader.api import Gradebook
    except ImportError:
        raise VerifyError("nbgrader is not installed here; `pip install nbgrader` where "
                          "the course is graded") from None
    path = course / GRADEBOOK
    if not path.is_file():
        raise VerifyError(f"{course}: no {GRADEBOOK} here; pass the course folder, after "
                          "`nbgrader generate_assignment` and `nbgrader autograde`")
    url = f"sqlite:///file:{quote(str(path.resolve()))}?mode=ro&uri=true"
    try:
        # course_id "": nbgrader adds a course row for any other id it does not know
        return Gradebook(url, course_id="")
    except Exception as exc:
        raise VerifyError(f"{path}: not an nbgrader gradebook nbgrader can open ({exc}); "
                          "`nbgrader db upgrade` updates an old one") from exc


def _assignment(gradebook: Any, course: Path, assignment: str) -> Any:
    from nbgrader.api import MissingEntry

    try:
        return gradebook.find_assignment(assignment)
    except MissingEntry:
        known = ", ".join(sorted(a.name for a in gradebook.assignments)) or "none"
        raise VerifyError(f"{course / GRADEBOOK}: no assignment {assignment!r} (it has: "
                          f"{known}); `nbgrader generate_assignment {assignment}` adds it"
                          ) from None


def recorded_points(course: Path, assignment: str
                    ) -> tuple[list[str], dict[str, dict[tuple[str, str], float | None]]]:
    """The assignment's notebooks in the gradebook, and per student who has a submission of
    it there, the auto score nbgrader recorded for each (notebook, cell)."""
    gradebook = _gradebook(course)
    try:
        found = _assignment(gradebook, course, assignment)
        notebooks = [notebook.name for notebook in found.notebooks]
        points = {submission.student_id: {
            (notebook.name, grade.name): grade.auto_score
            for notebook in submission.notebooks for grade in notebook.grades}
            for submission in found.submissions}
    finally:
        gradebook.close()
    return notebooks, points
