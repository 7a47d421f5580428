"""nbgrader: the source notebook generated from solutions/, graded by the real nbgrader
(generate_assignment, autograde, its gradebook), and read by `check` like any notebook."""

from __future__ import annotations

import ast
import copy
import html
import json
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner

from grader.cli import main
from grader.engine import CheckOptions, check_submission, error_report, hidden_plan
from grader.errors import UsageError
from grader.hidden import HiddenFile, load_hidden_file, parse_hidden_text
from grader.labs import LAB_FILES, get_lab
from grader.models import Report
from grader.notebook import NotInNotebookError, grade_function, kernel_source
from grader.platforms.nbgrader.kernel import HiddenTestsError, cell_hidden
from grader.platforms.nbgrader.source import (
    BEGIN_HIDDEN,
    END_HIDDEN,
    GradeCall,
    HiddenRef,
    HiddenStoreError,
    grade_call,
    hidden_for,
    hidden_store_path,
    hidden_toml,
    read_hidden_store,
    source_notebook,
    split_definitions,
    write_source_notebook,
)
from grader.stubs import BEGIN, strip_markers
from grader.submission import notebook_source
from tests.conftest import SharedSandboxes, grader_cli

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
HIDDEN = {lab: ROOT / "examples" / lab / "hidden.toml" for lab in LAB_FILES}
BUGGY = ROOT / "tests" / "submissions" / "optim" / "sgd_step_data_assign.py"
ASSIGNMENT = "ps1"
NOTEBOOK = "optimizer"  # nbgrader's notebook id: the lab file's stem


def meta(cell: nbformat.NotebookNode) -> dict:
    return dict(cell.metadata.get("nbgrader", {}))


def by_grade_id(notebook: nbformat.NotebookNode) -> dict[str, nbformat.NotebookNode]:
    return {meta(c)["grade_id"]: c for c in notebook.cells if "grade_id" in meta(c)}


def cpu_points(report: Report, *, hidden_cases: bool | None = None) -> dict[str, float]:
    """Score per function; with `hidden_cases` True/False, only hidden-case checks / others."""
    points: dict[str, float] = defaultdict(float)
    for check in report.checks:
        if hidden_cases is None or ("@" in check.id) == hidden_cases:
            points[check.function] += check.score
    return dict(points)


def secrets_of(hidden: HiddenFile) -> set[str]:
    """Text that only the hidden cases hold: their names, `hide` patterns and TOML lines."""
    lines = {line.strip() for line in hidden_toml(hidden).splitlines()}
    return ({c.name for c in hidden.cases} | set(hidden.hide)
            | {line for line in lines if "=" in line and len(line) >= 8} | {"[[case]]"})


def leaked(text: str, secrets: Iterable[str]) -> list[str]:
    return sorted(secret for secret in secrets if secret in text)


REF = HiddenRef("source/ps1.optimizer.hidden.toml", "0123456789abcdef" * 2)


@pytest.mark.parametrize("lab", sorted(LAB_FILES))
def test_source_notebook_has_a_solution_and_a_test_cell_per_function(lab: str) -> None:
    from nbgrader.nbgraderformat import MetadataValidator

    hidden = load_hidden_file(HIDDEN[lab])
    notebook = source_notebook(lab, solutions_root=SOLUTIONS, hidden=hidden, hidden_ref=REF)
    MetadataValidator().validate_nb(notebook)  # what generate_assignment checks
    nbformat.validate(notebook)
    functions = get_lab(lab).functions
    cells = by_grade_id(notebook)
    ids = list(cells)
    for function in functions:
        solution, test = cells[f"{function}_solution"], cells[f"test_{function}"]
        assert ids.index(f"test_{function}") == ids.index(f"{function}_solution") + 1
        assert meta(solution) | {"grade": False, "solution": True} == meta(solution)
        assert BEGIN in solution.source
        assert meta(test)["grade"] and meta(test)["locked"] and not meta(test)["solution"]
        assert test.source.splitlines()[-1].startswith(f'grade_function("{lab}", "{function}"')
        cases = [c.name for c in hidden.cases if c.function == function]
        assert (BEGIN_HIDDEN in test.source) == bool(cases)
        # The cell names the instructor's file, never a case (nbgrader's feedback shows it).
        assert grade_call(test.source) == GradeCall(lab, function, str(REF) if cases else None)
        assert not leaked(test.source, secrets_of(hidden))
        if cases:
            region = test.source.split(BEGIN_HIDDEN)[1].split(END_HIDDEN)[0]
            assert region.strip() == f'HIDDEN = "{REF}"'
    # The points add up to what the grader counts on the CPU, hidden cases included.
    possible = error_report(lab=lab, submission="", error="",
                            options=CheckOptions(device="cpu", hidden=hidden)).max_score
    points = [meta(c)["points"] for c in notebook.cells if meta(c).get("grade")]
    assert sum(points) == pytest.approx(possible)
    # Every line of the solution file (its docstring aside) is in exactly one code cell.
    source = (SOLUTIONS / lab / LAB_FILES[lab]).read_text()
    code = "\n".join(c.source for c in notebook.cells
                     if c.cell_type == "code" and not meta(c)["grade"])
    rest = source.splitlines()[ast.parse(source).body[0].end_lineno:]
    assert [x for x in code.splitlines() if x.strip()] == [x for x in rest if x.strip()]


def test_split_keeps_comments_and_decorators_with_their_definition() -> None:
    source = ('"""doc"""\nimport torch\n\n\n# about f\n@staticmethod\ndef f():\n'
              '    ### BEGIN SOLUTION\n    pass\n    ### END SOLUTION\n\n\nX = 1\n')
    segments = split_definitions(source, functions=["f"], name="m.py")
    lines = source.splitlines(keepends=True)
    texts = [(s.kind, "".join(lines[s.start:s.end])) for s in segments]
    assert texts == [("docstring", '"""doc"""\n'), ("given", "import torch\n"),
                     ("function", "# about f\n@staticmethod\ndef f():\n    ### BEGIN SOLUTION\n"
                                  "    pass\n    ### END SOLUTION\n"),
                     ("given", "X = 1\n")]


def test_hidden_toml_reads_back_to_the_same_cases() -> None:
    hidden = HiddenFile.model_validate({
        "lab": "optim", "hide": ["Adam.*"], "release": True,
        "case": [{"function": "SGD", "like": "trajectory.momentum", "name": "odd-1",
                  "weight": 0.25, "set": {"dtype": 'say "hi"\\', "shapes": [[3, 2], []],
                                          "config": {"lr": 1e-05, "betas": [0.9, 0.999]},
                                          "inf": float("inf"), "flag": False}}]})
    text = hidden_toml(hidden)
    assert parse_hidden_text(text, source="t").model_dump() == hidden.model_dump()


def test_hidden_cases_go_beside_the_assignment_never_into_the_notebook(tmp_path: Path) -> None:
    hidden = load_hidden_file(HIDDEN["optim"])
    out = tmp_path / "course" / "source" / ASSIGNMENT
    target = write_source_notebook("optim", solutions_root=SOLUTIONS, hidden=hidden, out=out)
    store = hidden_store_path(out, NOTEBOOK)
    assert store == tmp_path / "course" / "source" / "ps1.optimizer.hidden.toml"
    assert list(out.iterdir()) == [target]  # nothing nbgrader would release or copy
    written = target.read_text()
    assert not leaked(written, secrets_of(hidden))
    calls = [grade_call(c.source) for c in nbformat.read(str(target), as_version=4).cells]
    refs = {HiddenRef.parse(c.hidden) for c in calls if c is not None and c.hidden}
    assert len(refs) == 1
    ref = refs.pop()
    assert ref is not None
    assert ref.path == "source/ps1.optimizer.hidden.toml"
    assert read_hidden_store(store, token=ref.token).model_dump() == hidden.model_dump()
    # Releasing the results changes no test cell (nbgrader's copy of them stays right) ...
    released = hidden.model_copy(update={"release": True})
    write_source_notebook("optim", solutions_root=SOLUTIONS, hidden=released, out=out,
                          force=True)
    assert target.read_text() == written
    assert read_hidden_store(store, token=ref.token).release
    # ... other cases do, and the old test cells then refuse the new file.
    other = hidden.model_copy(update={"cases": hidden.cases[:-1]})
    write_source_notebook("optim", solutions_root=SOLUTIONS, hidden=other, out=out, force=True)
    assert target.read_text() != written
    with pytest.raises(HiddenStoreError, match="generate_assignment"):
        read_hidden_store(store, token=ref.token)


def test_a_test_cell_reads_its_cases_from_the_course_and_says_nothing_of_them(
        tmp_path: Path) -> None:
    hidden = load_hidden_file(HIDDEN["optim"])
    course = tmp_path / "course"
    out = course / "source" / ASSIGNMENT
    target = write_source_notebook("optim", solutions_root=SOLUTIONS, hidden=hidden, out=out)
    reference = next(c.hidden for c in map(grade_call, (
        cell.source for cell in nbformat.read(str(target), as_version=4).cells))
        if c is not None and c.function == "SGD")
    assert reference is not None
    kernel_folder = course / "autograded" / "bob" / ASSIGNMENT  # where autograde runs it
    planted = kernel_folder / "source" / "ps1.optimizer.hidden.toml"  # the student's folder
    planted.parent.mkdir(parents=True)
    planted.write_text(hidden_store_path(out, NOTEBOOK).read_text().replace("4242", "1"))
    part = cell_hidden(reference, lab="optim", function="SGD", cwd=kernel_folder)
    expected = hidden_for(hidden, get_lab("optim"), "SGD")
    assert part is not None and expected is not None
    assert part.model_dump() == expected.model_dump()  # the instructor's, SGD's part only
    # An instructor's mistake reaches the student as an error that quotes no case.
    store = hidden_store_path(out, NOTEBOOK)
    text = store.read_text()
    store.write_text(text.replace("seed = 4242", 'seed = "4242-secret"'))
    with pytest.raises(UsageError, match="4242-secret"):  # what the cases' own check says
        hidden_plan(get_lab("optim"), read_hidden_store(store))
    with pytest.raises(HiddenTestsError, match="verify") as wrong:
        cell_hidden(reference, lab="optim", function="SGD", cwd=kernel_folder)
    store.unlink()
    with pytest.raises(HiddenTestsError, match="nbgrader source") as missing:
        cell_hidden(reference, lab="optim", function="SGD", cwd=kernel_folder)
    # Cases that test cells held as TOML before references still grade, and fail as quietly.
    legacy = hidden_toml(expected)
    again = cell_hidden(legacy, lab="optim", function="SGD", cwd=kernel_folder)
    assert again is not None and again.model_dump() == expected.model_dump()
    with pytest.raises(HiddenTestsError) as old_wrong:
        cell_hidden(legacy.replace("seed = 4242", 'seed = "4242-secret"'), lab="optim",
                    function="SGD", cwd=kernel_folder)
    for error in (wrong, missing, old_wrong):
        message = str(error.value)
        assert not leaked(message, secrets_of(hidden) | {"4242"}), message
        assert error.value.__cause__ is None and error.value.__suppress_context__


def test_notebook_source_leaves_out_the_grader_cells(tmp_path: Path) -> None:
    notebook = source_notebook("optim", solutions_root=SOLUTIONS)
    extra = nbformat.v4.new_code_cell("import grader.notebook\ngrader.notebook.grade_function("
                                      "'optim', 'zero_grad')\n%timeit 1")
    notebook.cells.append(extra)
    path = tmp_path / "optimizer.ipynb"
    nbformat.write(notebook, str(path))
    source = notebook_source(path)
    assert "grade_function" not in source and "grader.notebook" not in source
    assert "def sgd_step(" in source and "from __future__" in source
    compile(source, "optimizer.ipynb", "exec")


def test_kernel_source_is_what_the_kernel_ran() -> None:
    history = ["from __future__ import annotations\nimport torch",
               "def f(:",  # a SyntaxError: defined nothing in the kernel
               "def f():\n    return 1",
               "%timeit f()\n!ls",
               "from __future__ import annotations\nimport torch",  # a cell run again
               'from grader.notebook import grade_function\ngrade_function("optim", "SGD")',
               # the instructor's hidden region, however it reached the history
               f'HIDDEN = None\n{BEGIN_HIDDEN}\nHIDDEN = "{REF}"\n{END_HIDDEN}',
               f'def g():\n    return "{REF}"']
    source = kernel_source(history)
    assert source.startswith("from __future__ import annotations\n")
    assert source.count("from __future__") == 1
    assert "def f(:" not in source and "grade_function" not in source
    assert "HIDDEN" not in source and REF.token not in source and "def g" not in source
    assert "# %timeit f()" in source and "# !ls" in source
    namespace: dict = {}
    exec(compile(source, "kernel", "exec"), namespace)
    assert namespace["f"]() == 1


def test_grade_function_outside_a_notebook_says_what_to_run() -> None:
    with pytest.raises(NotInNotebookError, match="inplace-grader check"):
        grade_function("optim", "sgd_step")


def test_cli_writes_the_source_notebook_once(tmp_path: Path) -> None:
    out = tmp_path / "course" / "source" / ASSIGNMENT
    args = ["nbgrader", "source", "--lab", "optim", "--root", str(ROOT), "-o", str(out)]
    first = CliRunner().invoke(main, [*args, "--hidden", str(HIDDEN["optim"])])
    assert first.exit_code == 0, first.output
    assert (out / "optimizer.ipynb").is_file() and ASSIGNMENT in first.output
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 2 and "--force" in again.output
    assert CliRunner().invoke(main, [*args, "--force"]).exit_code == 0
    wrong = CliRunner().invoke(main, [*args, "--force", "--hidden", str(HIDDEN["autograd"])])
    assert wrong.exit_code == 2 and "written for lab 'autograd'" in wrong.output
    bare = CliRunner().invoke(main, [*args[:4], "--root", str(tmp_path), "-o", str(out)])
    assert bare.exit_code == 2 and "solutions/" in bare.output


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def student_notebook(release: nbformat.NotebookNode, answers: dict[str, str]
                     ) -> nbformat.NotebookNode:
    """The released notebook with each solution cell filled in."""
    notebook = copy.deepcopy(release)
    for cell in notebook.cells:
        if meta(cell).get("solution"):
            cell.source = answers[meta(cell)["grade_id"]]
    return notebook


# A cell a student adds to the notebook: every later test cell calls this instead, and a test
# cell whose value is None gets all its points from nbgrader.
CHEAT = "import grader.notebook\ngrader.notebook.grade_function = lambda *args, **kwargs: None\n"


@dataclass(frozen=True)
class Course:
    """An nbgrader course of lab optim (hidden cases included) whose class nbgrader has
    autograded: alice with the reference, bob with a buggy sgd_step, carol with a crash in
    zero_grad and Adam left as the stub, and the cheater, the stubs with a cell that makes
    every later test cell give nbgrader its points."""

    root: Path
    source: Path
    release: nbformat.NotebookNode
    hidden: HiddenFile
    students: tuple[str, ...]


def autograde_a_class(course: Path) -> Course:
    """The course above, through nbgrader's own generate_assignment and autograde."""
    hidden = load_hidden_file(HIDDEN["optim"])
    source = write_source_notebook("optim", solutions_root=SOLUTIONS, hidden=hidden,
                                   out=course / "source" / ASSIGNMENT)
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        "c.ExecutePreprocessor.timeout = 180  # seconds per cell; the first starts a sandbox\n")
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    source_cells = by_grade_id(nbformat.read(str(source), as_version=4))
    reference = {grade_id: strip_markers(cell.source) for grade_id, cell in source_cells.items()
                 if meta(cell)["solution"]}
    buggy_file = BUGGY.read_text()
    lines = buggy_file.splitlines(keepends=True)
    buggy_sgd = next("".join(lines[s.start:s.end]) for s in split_definitions(
        buggy_file, functions=["sgd_step"], name=str(BUGGY)) if s.name == "sgd_step")
    release = nbformat.read(str(course / "release" / ASSIGNMENT / source.name), as_version=4)
    crash = ("def zero_grad(params, set_to_none=False):\n    import os\n\n"
             "    os._exit(3)  # ends the process that grades it\n")
    stubs = {meta(c)["grade_id"]: c.source for c in release.cells if meta(c).get("solution")}
    notebooks = {
        "alice": student_notebook(release, reference),
        "bob": student_notebook(release, {**reference, "sgd_step_solution": buggy_sgd}),
        "carol": student_notebook(release, {**reference, "zero_grad_solution": crash,
                                            "Adam_solution": stubs["Adam_solution"]}),
        "cheater": student_notebook(release, stubs),
    }
    notebooks["cheater"].cells.insert(2, nbformat.v4.new_code_cell(CHEAT))
    for student, notebook in notebooks.items():
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(notebook, str(folder / source.name))
    nbgrader(course, "autograde", ASSIGNMENT, "--create")
    return Course(course, source, release, hidden, tuple(notebooks))


@pytest.mark.slow
@pytest.mark.xdist_group("nbgrader-course")  # the course is autograded once (conftest.py)
def test_nbgrader_autograde_gives_the_grader_points(autograded_course: Course,
                                                   sandboxes: SharedSandboxes) -> None:
    from nbgrader.api import Gradebook

    course, source, release = autograded_course.root, autograded_course.source, \
        autograded_course.release
    hidden = autograded_course.hidden
    released = (course / "release" / ASSIGNMENT / source.name).read_text()
    assert "p.add_(p.grad, alpha=-lr)" not in released  # no solution code
    assert "raise NotImplementedError" in released
    for secret in ("BEGIN HIDDEN TESTS", "large_lr", "momentum_float64", "[[case]]"):
        assert secret not in released
    source_cells = by_grade_id(nbformat.read(str(source), as_version=4))

    # What the grader itself says of each submitted notebook, hidden cases included.
    functions = get_lab("optim").functions
    options = CheckOptions(device="cpu", hidden=hidden)
    reports = {student: check_submission(
        course / "submitted" / student / ASSIGNMENT / source.name, lab="optim",
        options=options, sandbox=sandboxes("optim")) for student in autograded_course.students}
    # The stubs earn nothing from the grader, whatever nbgrader recorded for them (the
    # cheater's recorded points are test_nbgrader_verify.py's).
    assert reports.pop("cheater").score == 0
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student, report in reports.items():
            submission = gradebook.find_submission(ASSIGNMENT, student)
            cells = {function: gradebook.find_grade(f"test_{function}", NOTEBOOK, ASSIGNMENT,
                                                    student) for function in functions}
            assert {f: g.score for f, g in cells.items()} == pytest.approx(cpu_points(report))
            assert {f: g.max_score for f, g in cells.items()} == {
                f: meta(source_cells[f"test_{f}"])["points"] for f in functions}
            assert submission.score == pytest.approx(report.score)
            assert submission.max_score == pytest.approx(report.max_score)
            if student == "alice":
                assert submission.score == submission.max_score  # hidden points too
                assert any("@" in c.id for c in report.checks)
            elif student == "carol":  # the crash costs zero_grad (and what calls it) only
                assert cells["zero_grad"].score == 0 < cells["sgd_step"].score
                assert cells["sgd_step"].score == cells["sgd_step"].max_score
                assert cells["Adam"].score == 0 < cells["Adam"].max_score  # the stub
            else:
                lost = {f: g.max_score - g.score for f, g in cells.items() if g.score < g.max_score}
                assert list(lost) == ["sgd_step"]
                expected = sum(c.max_score - c.score for c in report.checks
                               if c.function == "sgd_step")
                assert lost["sgd_step"] == pytest.approx(expected) and expected > 0
                hidden_points = sum(cpu_points(report, hidden_cases=True).values())
                bob_total = submission.score

    # `check` on bob's notebook (no hidden file) gives the visible part of the same total.
    result = grader_cli("check", "--device", "cpu", "--format", "json",
                        str(course / "submitted" / "bob" / ASSIGNMENT / source.name))
    assert result.returncode == 1, result.stderr
    visible = json.loads(result.stdout)["score"]
    assert visible == pytest.approx(sum(cpu_points(reports["bob"], hidden_cases=False).values()))
    assert visible == pytest.approx(bob_total - hidden_points)

    # The autograded notebook shows bob what failed; hidden results stay withheld.
    autograded = by_grade_id(nbformat.read(
        str(course / "autograded" / "bob" / ASSIGNMENT / source.name), as_version=4))
    outputs = autograded["test_sgd_step"].outputs
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "sgd_step" in text and "✗" in text and "large_lr" not in text
    assert all(o.output_type != "error" for o in outputs)
    crashed = by_grade_id(nbformat.read(
        str(course / "autograded" / "carol" / ASSIGNMENT / source.name), as_version=4))
    text = "".join(o.get("text", "") for o in crashed["test_zero_grad"].outputs
                   if o.output_type == "stream")
    assert "exit" in text.lower() and "✗" in text

    # Nothing of the hidden cases, nor of the solutions, reaches a student: not in any output
    # of the autograded notebooks, not in the feedback nbgrader generates from them (which
    # shows each test cell's source as autograde ran it). See NOTE: [hidden cases outside the
    # notebook] in grader/platforms/nbgrader/source.py.
    nbgrader(course, "generate_feedback", ASSIGNMENT)
    secrets = secrets_of(hidden)
    solution = solution_lines(nbformat.read(str(source), as_version=4), release)
    assert {"for p in params:", "bias_correction1 = 1 - beta1**step"} <= solution
    for student in autograded_course.students:
        autograded = nbformat.read(str(course / "autograded" / student / ASSIGNMENT
                                       / source.name), as_version=4)
        outputs = json.dumps([c.get("outputs", []) for c in autograded.cells],
                             ensure_ascii=False)
        page = (course / "feedback" / student / ASSIGNMENT / f"{NOTEBOOK}.html").read_text()
        page = html.unescape(re.sub(r"<[^>]+>", "", page))  # the text a student reads
        if student != "cheater":  # whose cell stops every test cell's feedback
            assert "points shown" in page and "hidden checks" in page  # the cells' feedback
        assert not leaked(outputs, secrets | solution), student
        assert not leaked(page, secrets), student
        if student == "cheater":  # the stubs: any solution line on the page is a leak
            assert not leaked(page, solution)


def solution_lines(source: nbformat.NotebookNode, release: nbformat.NotebookNode) -> set[str]:
    """The lines of the source notebook's solution regions that nothing a student is given
    holds: not the released notebook, not the grader's own hints (locales/)."""
    given = "\n".join(c.source for c in release.cells) + "".join(
        p.read_text() for p in (ROOT / "grader" / "locales").glob("*.toml"))
    lines: set[str] = set()
    for cell in source.cells:
        inside = False
        for line in cell.source.splitlines():
            inside = (inside or line.strip() == BEGIN) and "### END SOLUTION" not in line
            if inside and line.strip() != BEGIN and len(line.strip()) >= 12:
                lines.add(line.strip())
    return {line for line in lines if line not in given}


def test_a_notebook_test_cell_prints_each_visible_reproducer() -> None:
    from grader.platforms.nbgrader.kernel import reproducers_text
    from tests.conftest import failed_row, report_of

    text = reproducers_text(report_of(failed_row(reproducer="assert False\n"),
                                    failed_row("sgd_step.values", reproducer="assert 0\n",
                                         hidden=True)), lang="en")
    assert "assert False" in text and "assert 0" not in text


@pytest.mark.slow
def test_a_test_cell_tells_printing_past_the_output_limit_as_output(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The kernel's route of the output limit (issue 30): zero_grad's test cell says what was
    printed, with the limit; the next function's cell is not charged for it."""
    from grader.platforms.nbgrader import kernel

    flood = ROOT / "tests" / "submissions" / "optim" / "zero_grad_prints_past_the_output_limit.py"
    monkeypatch.setattr(kernel, "_input_history", lambda: [flood.read_text()])
    assert kernel.grade_function("optim", "zero_grad", lang="en") == 0
    said = capsys.readouterr().out
    assert "zero_grad: your program printed more than 64 MiB (the limit)" in said
    assert "OSError" not in said and "File too large" not in said
    points = get_lab("optim").rubric().points
    own = sum(value for check, value in points.items() if check.startswith("sgd_step."))
    assert kernel.grade_function("optim", "sgd_step", lang="en") == own
