"""`inplace-grader nbgrader verify`: nbgrader's recorded points against a regrade in the
sandbox, with the real nbgrader's autograde and gradebook."""

from __future__ import annotations

import copy
import hashlib
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner

from grader.cli import main
from grader.platforms.nbgrader.source import write_source_notebook
from grader.platforms.nbgrader.verify import notebook_submission, verify_assignment
from tests.platforms.test_nbgrader import (
    ASSIGNMENT,
    CHEAT,
    NOTEBOOK,
    SOLUTIONS,
    Course,
    by_grade_id,
    meta,
)


def verify(*args: str):
    return CliRunner().invoke(main, ["nbgrader", "verify", *args])


@pytest.fixture(scope="module")
def a_gradebook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A gradebook that knows assignment ps1 and its notebook (no submissions), as nbgrader
    writes it: made once (a new database costs nbgrader an `alembic` process of its own)."""
    from nbgrader.api import Gradebook

    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    with Gradebook(f"sqlite:///{path}") as gradebook:
        gradebook.add_assignment(ASSIGNMENT)
        gradebook.add_notebook(NOTEBOOK, ASSIGNMENT)
    return path


def course_with_gradebook(tmp_path: Path, gradebook: Path) -> Path:
    """A course holding a copy of `gradebook`."""
    course = tmp_path / "course"
    course.mkdir()
    shutil.copyfile(gradebook, course / "gradebook.db")
    return course


def test_usage_problems_are_one_line_and_exit_2(tmp_path: Path, a_gradebook: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = verify(str(empty), ASSIGNMENT)
    assert result.exit_code == 2 and "no gradebook.db" in result.output
    course = course_with_gradebook(tmp_path, a_gradebook)
    result = verify(str(course), "ps9")
    assert result.exit_code == 2 and "no assignment 'ps9' (it has: ps1)" in result.output
    result = verify(str(course), ASSIGNMENT)
    assert result.exit_code == 2 and "no source notebook" in result.output
    for result in (verify(str(empty), ASSIGNMENT), verify(str(course), ASSIGNMENT)):
        assert len(result.output.splitlines()) == 1


def test_a_notebook_that_cannot_be_read_is_a_line_not_a_crash(tmp_path: Path,
                                                              a_gradebook: Path) -> None:
    course = course_with_gradebook(tmp_path, a_gradebook)
    write_source_notebook("optim", solutions_root=SOLUTIONS, out=course / "source" / ASSIGNMENT)
    folder = course / "submitted" / "eve" / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / f"{NOTEBOOK}.ipynb").write_bytes(b"\xff\xfe not a notebook")
    result = verify(str(course), ASSIGNMENT)
    assert result.exit_code == 1, result.output
    line, summary = result.output.splitlines()
    assert line.startswith("eve: optimizer.ipynb cannot be read")
    assert "1 student regraded; 1 differs" in summary
    result = verify(str(course), ASSIGNMENT, "--student", "zed")
    assert result.exit_code == 2 and "zed" in result.output and "eve" in result.output


def test_the_regrade_runs_what_autograde_runs(tmp_path: Path) -> None:
    """nbgrader restores the locked cells before it runs a notebook; the grader's cells and the
    cells holding a hidden-tests region are never graded."""
    target = write_source_notebook("optim", solutions_root=SOLUTIONS, out=tmp_path / "source")
    source = nbformat.read(str(target), as_version=4)
    student = copy.deepcopy(source)
    setup = by_grade_id(student)["setup"]
    setup.source = "import os  # the student's edit of a locked cell"
    student.cells.insert(2, nbformat.v4.new_code_cell(CHEAT))
    student.cells.append(nbformat.v4.new_code_cell("EXTRA = 1  # a cell the student added"))
    student.cells.append(nbformat.v4.new_code_cell("[1, 2]", metadata={"nbgrader": "grade"}))
    path = tmp_path / "optimizer.ipynb"
    nbformat.write(student, str(path))
    code = notebook_submission(path, source).source
    assert by_grade_id(source)["setup"].source in code and "import os" not in code
    assert "EXTRA = 1" in code and "[1, 2]" in code
    assert "grade_function" not in code and "grader.notebook" not in code
    compile(code, str(path), "exec")


@pytest.mark.slow
@pytest.mark.xdist_group("nbgrader-course")  # the course is autograded once (conftest.py)
@pytest.mark.usefixtures("shared_verify_sandboxes")
def test_verify_names_the_student_whose_kernel_lied_to_nbgrader(autograded_course: Course
                                                                ) -> None:
    """The cheater's notebook made nbgrader record every point; the others are recorded as
    the grader grades them (alice, bob, and carol, whose zero_grad crashed)."""
    course, release = autograded_course.root, autograded_course.release
    gradebook = course / "gradebook.db"
    before = hashlib.sha256(gradebook.read_bytes()).hexdigest()

    result = verify(str(course), ASSIGNMENT)
    assert result.exit_code == 1, result.output
    *lines, summary = result.output.splitlines()
    assert len(lines) == 1 and re.match(r"cheater: optimizer.ipynb test_zero_grad recorded "
                                        r"[1-9][0-9.]*, regraded 0;", lines[0]), result.output
    for function in ("sgd_step", "SGD", "Adam"):
        assert f"test_{function} recorded " in lines[0]
    assert "4 students regraded; 1 differs" in summary

    only_honest = verify(str(course), ASSIGNMENT, "--student", "alice")
    assert only_honest.exit_code == 0, only_honest.output
    assert only_honest.output.splitlines() == [
        "ps1: 1 student regraded; the points nbgrader recorded match"]
    assert hashlib.sha256(gradebook.read_bytes()).hexdigest() == before  # only read

    # What nbgrader recorded for the cheater is every point; the regrade, the stubs' nothing.
    [cheat] = verify_assignment(course, ASSIGNMENT, students=["cheater"]).differing
    assert {d.function: (d.recorded, d.regraded) for d in cheat.differences} == {
        f: (meta(c)["points"], 0.0) for f, c in
        ((f, by_grade_id(release)[f"test_{f}"]) for f in ("zero_grad", "sgd_step", "SGD",
                                                          "Adam"))}
