"""A file that does not import: one block in every output, in the student's own terms."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest
from rich.console import Console

from grader.engine import CheckOptions, grade_submission
from grader.exporters.gradebook import gradebook_csv
from grader.exporters.junit import junit_xml
from grader.exporters.text import feedback_text
from grader.import_failure import own_traceback
from grader.labs import lab_rubric
from grader.models import Report
from grader.platforms.classroom50.result import result_json
from grader.platforms.gradescope.results import results_json
from grader.render import render_text
from grader.sandbox import Sandbox
from grader.submission import CellSpan, Submission, load_submission
from grader.summary import standing
from tests.conftest import SOLUTION, SharedSandboxes, full_marks

SOURCE = SOLUTION.read_text()


@pytest.fixture(scope="module")
def sandbox(sandboxes: SharedSandboxes) -> Sandbox:
    return sandboxes("optim")


def _grade(path: Path, sandbox: Sandbox) -> Report:
    submission = load_submission(path, filename="optimizer.py")
    return grade_submission(submission, lab="optim", options=CheckOptions(device="cpu"),
                            sandbox=sandbox)


def _notebook(path: Path, last_cell: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# My optimizer"),
                      nbformat.v4.new_code_cell(SOURCE),
                      nbformat.v4.new_markdown_cell("## Trying it out"),
                      nbformat.v4.new_code_cell(last_cell)]
    nbformat.write(notebook, path)
    return path


@pytest.fixture(scope="module")
def syntax_error(tmp_path_factory: pytest.TempPathFactory, sandbox: Sandbox) -> Report:
    broken = SOURCE.replace("def sgd_step(params: Iterable[torch.Tensor], lr: float) -> None:",
                            "def sgd_step(params: Iterable[torch.Tensor], lr: float) -> None")
    assert broken != SOURCE
    path = tmp_path_factory.mktemp("jae") / "jae.py"
    path.write_text(broken)
    return _grade(path, sandbox)


def test_the_block_names_the_students_file_and_line_not_the_graders_copy(
        syntax_error: Report) -> None:
    failure = syntax_error.import_error
    assert failure is not None
    line = SOURCE.splitlines().index(
        "def sgd_step(params: Iterable[torch.Tensor], lr: float) -> None:") + 1
    assert (failure.file, failure.error_type, failure.line) == ("jae.py", "SyntaxError", line)
    assert failure.message == "jae.py could not be imported: SyntaxError: expected ':'"
    assert f"line {line}: `def sgd_step(" in failure.got
    assert "submission" not in failure.model_dump_json()


def test_each_function_says_not_graded_without_repeating_the_error(syntax_error: Report) -> None:
    graded = [c for c in syntax_error.checks if c.status != "skipped"]
    assert [c.function for c in graded] == ["zero_grad", "sgd_step", "SGD", "Adam"]
    for check in graded:
        assert check.message == (f"not graded: jae.py did not import, so {check.function} "
                                 "could not run")
        assert "SyntaxError" not in check.model_dump_json()
    assert syntax_error.score == 0 and syntax_error.max_score == full_marks("optim")


def test_every_output_shows_the_error_once(syntax_error: Report) -> None:
    console = Console(width=100, record=True)
    render_text(syntax_error, console, lang="en")
    outputs = {
        "text": console.export_text(),
        "feedback": feedback_text(syntax_error, lang="en"),
        "gradescope": json.dumps(results_json(syntax_error)),
        "classroom50": json.dumps(result_json(syntax_error, env={})),
    }
    for name, text in outputs.items():
        assert text.count("SyntaxError: expected") == 1, name
    suite = ET.fromstring(junit_xml([syntax_error])).find("testsuite")
    assert suite is not None
    told = [element for element in suite.iter("error")
            if "SyntaxError" in element.get("message", "") + (element.text or "")]
    assert [element.get("type") for element in told] == ["import"]


def test_the_gradebook_says_the_file_did_not_import(syntax_error: Report) -> None:
    report = syntax_error.model_copy(update={"student": "jae"})
    csv = gradebook_csv([standing(report)], functions=["zero_grad", "sgd_step", "SGD", "Adam"])
    row = csv.splitlines()[1].split(",")
    assert row[4] == "did not import"
    assert row[5].startswith("SyntaxError at line")
    maximum = sum(points for check, points in lab_rubric("optim").points.items()
                  if check.startswith("zero_grad."))
    assert row[7] == f"{maximum:g}"  # zero_grad's maximum, as for any other student


def test_a_notebook_names_the_cell_and_the_line_within_it(tmp_path: Path,
                                                          sandbox: Sandbox) -> None:
    path = _notebook(tmp_path / "optimizer.ipynb", "x = 1\nprint(undefined_name)")
    failure = _grade(path, sandbox).import_error
    assert failure is not None
    assert (failure.error_type, failure.cell, failure.cell_line) == ("NameError", 4, 2)
    assert failure.got == "NameError at cell 4, line 2: `print(undefined_name)`"
    assert 'File "optimizer.ipynb", cell 4, line 2, in <module>' in failure.debug
    assert "grader/" not in failure.debug  # the traceback starts at the student's frame


def test_a_module_missing_where_the_grader_runs_says_what_to_do(tmp_path: Path,
                                                                sandbox: Sandbox) -> None:
    path = _notebook(tmp_path / "optimizer.ipynb",
                     "import matplotlib_not_here.pyplot as plt\nplt.plot([1, 2])")
    failure = _grade(path, sandbox).import_error
    assert failure is not None and failure.missing_module == "matplotlib_not_here"
    assert "is not installed where the grader runs" in failure.message
    assert "remove `import matplotlib_not_here`" in failure.hint
    assert "ask your course staff" in failure.hint


def test_cells_map_lines_of_the_joined_code_back() -> None:
    submission = Submission(Path("a.ipynb"), "a\nb\n\nc\n",
                            cells=(CellSpan(first_line=1, cell=2, lines=2),
                                   CellSpan(first_line=4, cell=5, lines=1)))
    assert submission.cell_of(2) == (2, 2)
    assert submission.cell_of(4) == (5, 1)
    assert submission.cell_of(3) is None  # the blank line between cells
    text = 'File "/tmp/x/submission3/submission.py", line 4, in f'
    assert own_traceback(text, submission) == 'File "a.ipynb", cell 5, line 1, in f'


def test_a_notebook_cell_after_cell_magics_is_named_by_its_own_cell_and_line(
        tmp_path: Path, sandbox: Sandbox) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(SOURCE),
                      nbformat.v4.new_code_cell("%%bash\necho one\necho two"),  # left out
                      nbformat.v4.new_code_cell("%%time\nx = 1\nprint(undefined_name)")]
    path = tmp_path / "optimizer.ipynb"
    nbformat.write(notebook, path)
    failure = _grade(path, sandbox).import_error
    assert failure is not None
    assert (failure.error_type, failure.cell, failure.cell_line) == ("NameError", 3, 3)
    assert failure.got == "NameError at cell 3, line 3: `print(undefined_name)`"


def test_a_notebooks_error_at_run_time_names_the_cell_and_the_line_within_it(
        tmp_path: Path, sandbox: Sandbox) -> None:
    # issue 30: told as "NameError at line 64", the line in all cells put together
    path = _notebook(tmp_path / "optimizer.ipynb",
                     "x = 1\ndef zero_grad(params, set_to_none=False):\n"
                     "    for p in params:\n        undefined_name\n")
    report = _grade(path, sandbox)
    assert report.import_error is None
    raised = [c for c in report.checks if c.function == "zero_grad" and c.got
              and c.got.startswith("NameError")]
    assert raised, [c.got for c in report.checks if c.function == "zero_grad"]
    for check in raised:
        assert check.got == "NameError at cell 4, line 4 (undefined_name)"
        assert 'File "optimizer.ipynb", cell 4, line 4, in zero_grad' in check.debug
        assert "submission" not in check.debug
