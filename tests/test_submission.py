"""Reading a submission: any bytes give a source or one line saying what is wrong, and a
notebook is read as Jupyter runs it (issue 25)."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.engine import CheckOptions, check_submission
from grader.notebook_cells import is_autograder_test
from grader.student_files import MESSAGE_CHARS
from grader.submission import (
    PYTHON_CELL_MAGICS,
    Submission,
    SubmissionError,
    code_cell_source,
    load_submission,
)
from tests.conftest import SOLUTION, grader_cli

# --- helpers -------------------------------------------------------------------------------


def _cell(source: Any = "x = 1", **fields: Any) -> dict[str, Any]:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": source, **fields}


def _notebook(*cells: Any, **fields: Any) -> dict[str, Any]:
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": list(cells), **fields}


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


def _load(path: Path) -> Submission:
    return load_submission(path, filename="optimizer.py")


def _refused(path: Path) -> str:
    """The SubmissionError's message: one line, bounded, naming the file."""
    with pytest.raises(SubmissionError) as caught:
        _load(path)
    message = str(caught.value)
    assert "\n" not in message and "\r" not in message
    assert len(message) <= MESSAGE_CHARS and message.isprintable(), message
    return message


def _outcome(path: Path) -> Submission | str:
    """What the property tests allow: a Submission the sandbox can take, or one line."""
    try:
        submission = _load(path)
    except SubmissionError as exc:
        message = str(exc)
        assert "\n" not in message and len(message) <= MESSAGE_CHARS and message.isprintable()
        return message
    submission.source.encode("utf-8")  # the sandbox writes it as UTF-8
    assert "\0" not in submission.source
    lines = submission.source.count("\n") + 1
    for span in submission.cells:
        assert span.first_line >= 1 and span.first_line + span.lines - 1 <= lines
    return submission


def _python_lines(source: str) -> list[str]:
    return [line for line in source.splitlines() if line.strip() and
            not line.lstrip().startswith("#")]


# --- malformed notebooks: each one line, never a traceback -----------------------------------

DEEP = b"[" * 100_000 + b"]" * 100_000
REFUSED: dict[str, tuple[bytes, str]] = {
    "source is a number": (_json(_notebook(_cell(3))), "cell 1's source is not text"),
    "source holds a number": (_json(_notebook(_cell(["x = 1\n", 2]))),
                              "cell 1's source is not text"),
    "source is an object": (_json(_notebook(_cell({"a": 1}))), "cell 1's source is not text"),
    "nbformat 5": (_json(_notebook(_cell(), nbformat=5)), "its nbformat is 5"),
    "nbformat as text": (_json(_notebook(_cell(), nbformat="4")), "its nbformat is '4'"),
    "nbformat true": (_json(_notebook(_cell(), nbformat=True)), "its nbformat is True"),
    "nbformat a list": (_json(_notebook(_cell(), nbformat=[4])), "its nbformat is a list"),
    "nested too deeply": (DEEP, "nested too deeply"),
    "nested cells": (b'{"nbformat": 4, "cells": ' + DEEP + b"}", "nested too deeply"),
    "cells an object": (_json(_notebook() | {"cells": {"0": _cell()}}), "no list of cells"),
    "no cells": (_json({"nbformat": 4, "nbformat_minor": 5, "metadata": {}}),
                 "no list of cells"),
    "a cell is text": (_json(_notebook(_cell(), "x = 1")), "cell 2 is text, not a JSON object"),
    "a cell is null": (_json(_notebook(None)), "cell 1 is null, not a JSON object"),
    "no cell_type": (_json(_notebook({"source": "x = 1", "metadata": {}})),
                     "cell 1 has no cell_type"),
    "cell_type a number": (_json(_notebook(_cell(cell_type=1))),
                           "cell 1's cell_type is not text"),
    "not UTF-8": (b'{"cells": [{"cell_type": "code", "source": "\xff"}]}', "not UTF-8 text"),
    "UTF-16": (json.dumps(_notebook(_cell())).encode("utf-16"), "not UTF-8 text"),
    "a BOM, then not UTF-8": (b"\xef\xbb\xbf{\n\xff}", "not UTF-8 text (byte 0xff on line 2)"),
    "null": (b"null", "it is null, not a JSON object"),
    "an array": (b"[1, 2]", "it is a list, not a JSON object"),
    "a number": (b"12", "it is a number, not a JSON object"),
    "huge nbformat": (b'{"nbformat": 1' + b"0" * 5000 + b', "cells": []}',
                      "its nbformat is inf"),
    "empty": (b"", "not JSON (Expecting value at line 1, column 1)"),
    "truncated": (_json(_notebook(_cell()))[:-5], "not JSON"),
    "NaN nbformat": (b'{"nbformat": NaN, "cells": []}', "its nbformat is nan"),
    "unpaired surrogate": (b'{"nbformat": 4, "nbformat_minor": 5, "cells": [{"cell_type": "code", '
                           b'"metadata": {}, "source": "x = \\"\\ud800\\""}]}',
                           "cell 1 holds a character that is not Unicode text"),
    "NUL in code": (_json(_notebook(_cell("x = 1\ny = '\0'"))),
                    "cell 1, line 2 holds a NUL character"),
    "worksheets not a list": (_json({"nbformat": 3, "worksheets": {}}),
                              "nbformat 3 without a list of worksheets"),
    "worksheet without cells": (_json({"nbformat": 3, "worksheets": [{"cells": 1}]}),
                                "worksheet 1 has no list of cells"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_malformed_notebook_is_one_line_naming_the_file_and_the_fault(
        tmp_path: Path, name: str) -> None:
    data, fault = REFUSED[name]
    path = tmp_path / "optimizer.ipynb"
    path.write_bytes(data)
    message = _refused(path)
    assert message.startswith("optimizer.ipynb: not a readable notebook: "), message
    assert fault in message, message


# Where Jupyter is lenient, so is the grader: these are read, their code cell graded.
READ: dict[str, bytes] = {
    "a cell without metadata": _json(_notebook({"cell_type": "code", "source": "x = 1"})),
    "metadata a list": _json(_notebook(_cell(metadata=[1]))),
    "nbgrader metadata text": _json(_notebook(_cell(metadata={"nbgrader": "grade"}))),
    "grade a number": _json(_notebook(_cell(metadata={"nbgrader": {"grade": 0}}))),
    "an unknown minor version": _json(_notebook(_cell(), nbformat_minor="x")),
    "no nbformat": _json({"cells": [_cell()]}),
    "a BOM": b"\xef\xbb\xbf" + _json(_notebook(_cell())),
    "NaN and huge numbers elsewhere": (b'{"nbformat": 4, "metadata": {"a": NaN, "b": -Infinity,'
                                       b' "c": 1' + b"0" * 5000 + b'}, "cells": [{"cell_type": '
                                       b'"code", "source": ["x = 1"], "execution_count": 1e999}]}'),
    "an unknown cell type": _json(_notebook({"cell_type": "heading", "source": 1}, _cell())),
    "a markdown source that is not text": _json(_notebook({"cell_type": "markdown",
                                                           "source": None}, _cell())),
    "nbformat 3": _json({"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [
        {"cells": [{"cell_type": "code", "input": ["x = 1"], "language": "python",
                    "outputs": []}]}]}),
    "NUL in a %%bash body": _json(_notebook(_cell("%%bash\necho '\0'"), _cell())),
}


@pytest.mark.parametrize("name", list(READ))
def test_what_jupyter_opens_is_read(tmp_path: Path, name: str) -> None:
    path = tmp_path / "optimizer.ipynb"
    path.write_bytes(READ[name])
    submission = _load(path)
    assert "x = 1" in submission.source
    assert submission.cell_of(submission.source.splitlines().index("x = 1") + 1) is not None


def test_an_autograder_test_cell_is_left_out_and_odd_metadata_is_not_one() -> None:
    assert is_autograder_test(_cell(metadata={"nbgrader": {"grade": True, "solution": False}}))
    assert not is_autograder_test(_cell(metadata={"nbgrader": {"grade": True, "solution": 1}}))
    for metadata in ([1], "x", None, {"nbgrader": "grade"}, {"nbgrader": [True]},
                     {"nbgrader": {"grade": []}}, {"nbgrader": None}):
        assert not is_autograder_test(_cell(metadata=metadata)), metadata
    assert not is_autograder_test({})


def test_a_file_name_with_a_newline_stays_one_line(tmp_path: Path) -> None:
    path = tmp_path / "my\nnotebook.ipynb"
    path.write_bytes(b"[")
    assert _refused(path).startswith("my\\nnotebook.ipynb: not a readable notebook: it is not JSON")


def test_a_fifo_is_refused_without_being_opened(tmp_path: Path) -> None:
    for name in ("optimizer.ipynb", "optimizer.py"):
        os.mkfifo(tmp_path / name)
        assert _refused(tmp_path / name) == f"{name}: cannot read it: not a regular file"


def test_the_size_limits_stay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "optimizer.ipynb"
    path.write_bytes(_json(_notebook(*[_cell("x = 1\n" * 30_000)] * 6)))
    assert "MiB of code cells; the grader reads at most 1 MiB" in _refused(path)
    monkeypatch.setattr("grader.submission.NOTEBOOK_LIMIT", 1024**2)
    path.write_bytes(_json(_notebook(_cell("x = 1"), metadata={"pad": "x" * 1024**2})))
    assert "MiB of notebook; the grader reads at most 1 MiB" in _refused(path)


# --- .py files --------------------------------------------------------------------------------

PY_REFUSED: dict[str, tuple[bytes, str]] = {
    "not UTF-8": (b"x = 1\ny = '\xff'\n", "not UTF-8 text (byte 0xff on line 2); save it as"),
    "UTF-16": ("x = 1\n".encode("utf-16"), "not UTF-8 text (it looks like UTF-16)"),
    "NUL": (b"x = 1\n\0\n", "line 2 holds a NUL byte"),
    "a BOM, then not UTF-8": (b"\xef\xbb\xbfx = 1\ny = '\xe9'\n", "(byte 0xe9 on line 2)"),
    "an unknown coding": (b"# coding: klingon\nx = 1\n", "unknown encoding"),
    "a coding a BOM contradicts": (b"\xef\xbb\xbf# coding: latin-1\nx = 1\n", "encoding problem"),
    "a codec that is not text": (b"# coding: rot13\nx = 1\n", "is not a text encoding"),
}


@pytest.mark.parametrize("name", list(PY_REFUSED))
def test_a_python_file_python_cannot_read_is_one_line(tmp_path: Path, name: str) -> None:
    data, fault = PY_REFUSED[name]
    path = tmp_path / "optimizer.py"
    path.write_bytes(data)
    message = _refused(path)
    assert message.startswith("optimizer.py: cannot read it as Python: "), message
    assert fault in message, message


def test_a_python_file_is_read_as_python_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "optimizer.py"
    path.write_bytes(b"\xef\xbb\xbfx = 1\n")  # Notepad's UTF-8: a BOM
    assert _load(path).source == "x = 1\n"
    path.write_bytes("# -*- coding: latin-1 -*-\ns = 'é'\n".encode("latin-1"))
    source = _load(path).source
    assert "s = 'é'" in source
    namespace: dict[str, Any] = {}
    exec(compile(source, "optimizer.py", "exec"), namespace)  # as the child compiles it
    assert namespace["s"] == "é"


# --- any bytes --------------------------------------------------------------------------------

VOCABULARY = ["cells", "cell_type", "source", "metadata", "nbgrader", "grade", "solution",
              "nbformat", "nbformat_minor", "outputs", "execution_count", "worksheets", "input"]
TEXT = st.one_of(st.text(max_size=20),
                 st.sampled_from(["code", "markdown", "%%bash\necho", "%%time\nx = 1", "!ls",
                                  "\ud800", "\0", "x = 1\n", "def f(:", "\r\n", "\\"]))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=5)
    | st.dictionaries(st.sampled_from(VOCABULARY) | st.text(max_size=5), inner, max_size=6),
    max_leaves=30)
FAST = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


@FAST
@given(value=JSON)
def test_any_json_is_read_or_refused_in_one_line(tmp_path: Path, value: Any) -> None:
    path = tmp_path / "optimizer.ipynb"
    path.write_text(json.dumps(value), encoding="utf-8")
    _outcome(path)


@FAST
@given(data=st.binary(max_size=300))
def test_any_bytes_are_read_or_refused_in_one_line(tmp_path: Path, data: bytes) -> None:
    for name in ("optimizer.ipynb", "optimizer.py"):
        path = tmp_path / name
        path.write_bytes(data)
        _outcome(path)


def _valid() -> dict[str, Any]:
    return _notebook({"cell_type": "markdown", "metadata": {}, "source": ["# Title"]},
                     _cell(["import torch\n", "%matplotlib inline\n", "x = 1"]),
                     _cell("%%bash\necho hi", metadata={"nbgrader": {"grade": False,
                                                                      "solution": True}}),
                     _cell("assert x == 1", metadata={"nbgrader": {"grade": True,
                                                                   "solution": False}}))


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*at, index))
    return found


@FAST
@given(data=st.data())
def test_a_notebook_with_one_field_changed_is_read_or_refused_in_one_line(
        tmp_path: Path, data: st.DataObject) -> None:
    notebook = _valid()
    where = data.draw(st.sampled_from(_paths(notebook)[1:]))
    parent = notebook
    for step in where[:-1]:
        parent = parent[step]
    if data.draw(st.booleans()):
        parent[where[-1]] = data.draw(JSON)
    elif isinstance(parent, dict):
        del parent[where[-1]]
    else:
        parent.insert(where[-1], data.draw(JSON))
    path = tmp_path / "optimizer.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    _outcome(path)


# --- cells as Jupyter runs them ---------------------------------------------------------------


def _solution_cells() -> list[str]:
    """The solution in four cells: the imports and zero_grad, sgd_step, SGD, Adam."""
    source = SOLUTION.read_text()
    cuts = [source.index(head) for head in ("\ndef sgd_step", "\nclass SGD", "\nclass Adam")]
    return [source[start:end].strip("\n") for start, end in
            zip([0, *cuts], [*cuts, len(source)], strict=True)]


BASH = "echo 'training...'\nfor i in 1 2 3; do echo $i; done\nls -la | grep optimizer"


def _magic_notebook(path: Path) -> Path:
    first, sgd_step, sgd, adam = _solution_cells()
    path.write_text(json.dumps(_notebook(
        {"cell_type": "markdown", "metadata": {}, "source": "# My optimizer"},
        _cell(first),
        _cell(f"%%bash\n{BASH}"),
        _cell("%%script false\nraise SystemExit('never run')"),
        _cell("%%writefile helper.py\ndef sgd_step(params, lr):\n    pass"),
        _cell(f"%%time\n{sgd_step}"),
        _cell(f"%%capture out\n%matplotlib inline\n{sgd}"),
        _cell(adam + "\n!nvidia-smi\nlosses = !ls"),
    )))
    return path


def test_a_cell_magic_is_python_only_where_it_runs_python(tmp_path: Path) -> None:
    submission = _load(_magic_notebook(tmp_path / "optimizer.ipynb"))
    tree = ast.parse(submission.source)  # it compiles
    defined = {node.name for node in tree.body
               if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert defined == {"zero_grad", "sgd_step", "SGD", "Adam"}
    python = _python_lines(submission.source)
    assert not any(line in python for line in BASH.splitlines())
    assert "raise SystemExit('never run')" not in python
    assert "    pass" not in python  # the %%writefile body
    # Each cell keeps its lines: the %%time cell's `def sgd_step` is its second line.
    line = submission.source.splitlines().index(
        "def sgd_step(params: Iterable[torch.Tensor], lr: float) -> None:") + 1
    assert submission.cell_of(line) == (6, 2)


@pytest.mark.parametrize(("cell", "python"), [
    ("%%bash\necho hi", []),
    ("\n\n%%time\nx = 1", ["x = 1"]),  # IPython skips leading blank lines
    ("  %%time\n  x = 1", ["x = 1"]),  # and takes the first line's indentation off every line
    ("%%time x = 2\nx = 1", []),  # a UsageError in IPython: nothing runs
    ("%%timeit\nx = 1", []),  # runs in a function of its own: defines nothing
    ("%%capture out\n%%time\nx = 1\n!ls", ["x = 1"]),  # the body is a cell of its own
    ("%%capture\n%%bash\nx = 1", []),
    ("%%time?", []),
    ("%%unknown_magic\nx = 1", []),
    ("x = 1\n%%time\ny = 2", ["x = 1", "y = 2"]),  # not the first line: a line escape
    ("s = '''\n%not a magic\n'''", ["s = '''", "%not a magic", "'''"]),
    ("f(1,\n  %2)", ["f(1,", "%2)"]),  # inside brackets
    ("!pip install \\\n  torch\nx = 1", ["x = 1"]),  # a backslash continues the escape
    ("x = !ls\ny = %time f()\nz = a % b\nw = 'a=%d' % 1", ["z = a % b", "w = 'a=%d' % 1"]),
    ("torch.add?\n?torch\nx??\n/print 1", []),
    ("for i in range(2):\n    %time f(i)", ["for i in range(2):", "pass  # %time f(i)"]),
])
def test_cells_as_ipython_runs_them(cell: str, python: list[str]) -> None:
    source = code_cell_source(cell)
    assert source.count("\n") == cell.count("\n")  # line for line
    assert [line.strip() for line in _python_lines(source)] == python


def test_the_cell_magics_read_as_python_are_those_ipython_runs_in_the_namespace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """IPython itself is the oracle: a cell defines a name in its namespace exactly where the
    grader's reading of the cell defines it (%%debug waits for the student: not run here)."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell(config=config)
    builtin = set(shell.magics_manager.magics["cell"])
    assert builtin >= PYTHON_CELL_MAGICS
    odd = ["nosuchmagic", "time x = 1", "timeit -n1 -r1", "script false", "writefile probe.py"]
    for magic in [*sorted(builtin - {"debug", "timeit"}), *odd]:
        cell = f"%%{magic}\ndef probe():\n    return 1\n"
        shell.user_ns.pop("probe", None)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            shell.run_cell(cell)
        ours: dict[str, Any] = {}
        exec(code_cell_source(cell), ours)
        assert ("probe" in shell.user_ns) == ("probe" in ours), magic


def test_a_correct_notebook_with_cell_magics_gets_full_marks(tmp_path: Path) -> None:
    """Today's reading graded the %%bash body as Python: SyntaxError at cell 3, 0 points."""
    path = _magic_notebook(tmp_path / "optimizer.ipynb")
    report = check_submission(path, lab="optim", options=CheckOptions(device="cpu"))
    assert report.import_error is None
    assert report.score == report.max_score > 0


def test_a_source_no_file_can_hold_is_one_line_not_a_crash() -> None:
    """A kernel's history can hold a lone surrogate (the nbgrader path builds a Submission
    from it); writing it for the child would raise in the grading process."""
    from grader.engine import CheckOptions, grade_submission
    from grader.submission import Submission

    report = grade_submission(Submission(Path("ps1.ipynb"), "x = '\udcff'\n"), lab="optim",
                              options=CheckOptions(device="cpu"))
    assert report.error == ("ps1.ipynb holds text that is not Unicode (a lone surrogate): "
                            "save it as UTF-8")


@pytest.mark.parametrize("text", ['{"nbformat": 5, "cells": []}',
                                  '{"nbformat": 4, "cells": [{"cell_type": "code", "source": 42}]}',
                                  "[" * 50_000])
def test_check_answers_a_malformed_notebook_in_one_line_with_exit_2(tmp_path: Path,
                                                                    text: str) -> None:
    path = tmp_path / "optimizer.ipynb"
    path.write_text(text)
    run = grader_cli("check", str(path))
    assert run.returncode == 2, run.stderr
    assert run.stdout == "" and run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith("inplace-grader: error: optimizer.ipynb")
