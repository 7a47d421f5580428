from __future__ import annotations

import pytest

from grader.stubs import StubError, make_stub, sync_stubs
from tests.conftest import ROOT


def test_committed_stubs_match_the_solutions() -> None:
    drift = sync_stubs(ROOT / "solutions", ROOT / "assignments", write=False)
    assert drift == [], "run `inplace-grader stubs` and commit the result"


def test_a_region_becomes_not_implemented_at_its_indentation() -> None:
    source = ('def f(x):\n    """Doc."""\n'
              '    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n')
    assert make_stub(source) == (
        'def f(x):\n    """Doc."""\n    # YOUR CODE HERE\n    raise NotImplementedError\n')


@pytest.mark.parametrize("source", [
    "### BEGIN SOLUTION\nx = 1\n",
    "x = 1\n### END SOLUTION\n",
    "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n",
])
def test_unbalanced_markers_are_reported_with_a_line(source: str) -> None:
    with pytest.raises(StubError, match=r"f\.py:\d"):
        make_stub(source, name="f.py")


def test_the_stub_keeps_every_lab_name_and_docstring() -> None:
    stub = (ROOT / "assignments" / "optim" / "optimizer.py").read_text()
    for name in ("def zero_grad(", "def sgd_step(", "class SGD:", "class Adam:"):
        assert name in stub
    assert "BEGIN SOLUTION" not in stub and "p.add_(p.grad, alpha=-lr)" not in stub
    assert stub.count("raise NotImplementedError") == 8
