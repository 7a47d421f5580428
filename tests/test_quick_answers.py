"""What `check` tells without running anything: a file that does not parse, one that cannot
define any of the lab's names. The fast answer must be the sandbox's answer, never a guess:
a syntax error is worded as the full report words it, and "defines none" is said only where
running the file would show the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.engine import CheckOptions, DoesNotImport, check_submission
from grader.quick_answers import cannot_define, syntax_error
from grader.sandbox import Sandbox
from grader.submission import SubmissionError
from tests.conftest import ROOT

NAMES = ["zero_grad", "sgd_step", "SGD", "Adam"]
BROKEN = {
    "unclosed": "def zero_grad(params:\n    pass\n",
    "indentation": "def zero_grad(params):\n    for p in params:\n        pass\n  return\n",
    "tabs": "def zero_grad(params):\n\tif params:\n        return\n",
    "return outside": "import torch\nreturn 3\n",  # found at compile, not parse
    "nonlocal at top": "nonlocal x\n",
    "bad future": "from __future__ import braces\n",
}


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    with Sandbox(["optim"]) as running:
        yield running


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_syntax_error_is_told_as_the_sandbox_tells_it(tmp_path: Path, sandbox: Sandbox,
                                                          name: str) -> None:
    path = tmp_path / "optimizer.py"
    path.write_text(BROKEN[name])
    options = CheckOptions(device="cpu")
    full = check_submission(path, lab="optim", options=options, sandbox=sandbox)
    assert full.import_error is not None
    with pytest.raises(DoesNotImport) as told:
        check_submission(path, lab="optim", options=options, fast_answers=True)
    fast = told.value.failure
    assert fast.model_dump(exclude={"debug"}) == full.import_error.model_dump(exclude={"debug"})
    assert fast.debug.splitlines()[-1] == full.import_error.debug.splitlines()[-1]


def test_a_notebook_cell_that_does_not_parse_is_named_by_cell(tmp_path: Path) -> None:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("import torch"),
                      nbformat.v4.new_code_cell("def zero_grad(params:\n    pass")]
    path = tmp_path / "optimizer.ipynb"
    nbformat.write(notebook, path)
    with pytest.raises(DoesNotImport) as told:
        check_submission(path, lab="optim", fast_answers=True)
    assert (told.value.failure.cell, told.value.failure.cell_line) == (2, 1)


def test_another_labs_file_is_told_at_once(tmp_path: Path) -> None:
    path = tmp_path / "optimizer.py"
    path.write_text((ROOT / "solutions" / "tensor_ops" / "tensor_ops.py").read_text())
    with pytest.raises(SubmissionError, match="defines none of the lab's names"):
        check_submission(path, lab="optim", fast_answers=True)


# Each snippet with whether a file made of it defines one of NAMES when imported. A module
# `helpers` sits beside the file: it defines zero_grad, and puts SGD into whoever imports it.
SNIPPETS = {
    "x = 1": False,
    "import torch": False,
    "# zero_grad comes later": False,
    "def relu_(x):\n    return x.clamp_(min=0)": False,
    "def zero_grad(params):\n    pass": True,
    "zero_grad = lambda params: None": True,
    "class Adam:\n    pass": True,
    "from helpers import *": True,
    "from helpers import zero_grad": True,
    "import helpers": True,  # it adds SGD to this module as it is imported
    "globals()['zero' + '_grad'] = print": True,
    "exec('def sgd' + '_step(): pass')": True,
    "def __getattr__(name):\n    return print": True,
    "import sys\nsetattr(sys.modules[__name__], 'Ad' + 'am', 1)": True,
    "vars()['S' + 'GD'] = 1": True,
    "ｚｅｒｏ_grad = 1": True,  # Python reads identifiers as their NFKC form
    "names = ['zero_grad']": False,
    "import importlib\nimportlib.import_module('helpers')": True,
}
HELPERS = ("import sys\n\ndef zero_grad(params):\n    pass\n\n"
           "if 'optimizer' in sys.modules:\n    sys.modules['optimizer'].SGD = object\n")


def defines_any(folder: Path, source: str) -> bool:
    """Import the file for real (these snippets are ours) and look."""
    (folder / "optimizer.py").write_text(source)
    (folder / "helpers.py").write_text(HELPERS)
    probe = (f"import sys; sys.path.insert(0, {str(folder)!r}); import optimizer, json; "
             f"print(json.dumps(any(hasattr(optimizer, n) for n in {NAMES!r})))")
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert ran.returncode == 0, ran.stderr
    return bool(json.loads(ran.stdout))


@pytest.mark.parametrize("snippet", sorted(SNIPPETS))
def test_each_snippet_is_what_the_table_says(tmp_path: Path, snippet: str) -> None:
    assert defines_any(tmp_path, snippet) == SNIPPETS[snippet]
    if SNIPPETS[snippet]:
        assert not cannot_define(snippet, NAMES, tmp_path)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(sorted(SNIPPETS)), min_size=1, max_size=4))
def test_defines_none_is_said_only_where_the_import_shows_it(tmp_path: Path,
                                                             parts: list[str]) -> None:
    source = "\n".join(parts) + "\n"
    if cannot_define(source, NAMES, tmp_path):
        assert not defines_any(tmp_path, source), source


def test_a_file_that_parses_has_no_syntax_error_and_one_too_deep_is_the_sandboxs() -> None:
    assert syntax_error((ROOT / "solutions" / "optim" / "optimizer.py").read_text()) is None
    deep = syntax_error("x = " + "(" * 5000 + ")" * 5000 + "\n")
    assert deep is None or deep["type"] == "SyntaxError"  # "too many nested parentheses"


def test_check_answers_a_syntax_error_without_torch(tmp_path: Path) -> None:
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ImportError("torch was imported")\n')
    path = tmp_path / "optimizer.py"
    path.write_text(textwrap.dedent(BROKEN["unclosed"]))
    ran = subprocess.run([sys.executable, "-m", "grader", "check", str(path)],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(
                             [str(ROOT), str(fake.parent)])})
    assert ran.returncode == 1, ran.stderr
    assert "torch was imported" not in ran.stderr
    assert "SyntaxError at line 1: `def zero_grad(params:`" in ran.stdout
    assert "Nothing was graded: optimizer.py must import first" in ran.stdout
