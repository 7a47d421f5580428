"""What a grading is fixed against (grader/engine/context.py): here, grading some of a lab's
functions only."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.engine import CheckOptions, check_submission
from grader.errors import UsageError
from tests.conftest import ROOT, SharedSandboxes

SOLUTION = ROOT / "solutions" / "tensor_ops" / "tensor_ops.py"


@pytest.mark.slow  # three gradings of tensor_ops
def test_grading_some_functions_judges_theirs_alone(tmp_path: Path,
                                                    sandboxes: SharedSandboxes) -> None:
    """A file whose softmax_ is broken earns every point of relu_ and clamp_ when only they
    are graded, and loses softmax_'s when it is; the report holds the named functions'
    checks only, worth what they are worth in the whole lab."""
    broken = tmp_path / "tensor_ops.py"
    broken.write_text(SOLUTION.read_text().replace("def softmax_(", "def softmax_(*_):\n"
                                                   "    return None\n\n\ndef _was_softmax_(", 1))
    sandbox = sandboxes("tensor_ops")
    whole = check_submission(SOLUTION, lab="tensor_ops", options=CheckOptions(device="cpu"),
                             sandbox=sandbox)
    some = check_submission(broken, lab="tensor_ops", sandbox=sandbox,
                            options=CheckOptions(device="cpu", functions=("clamp_", "relu_")))
    assert {c.function for c in some.checks} == {"relu_", "clamp_"}
    assert next(c.function for c in some.checks) == "relu_"  # the lab's order, not the asked
    assert some.score == some.max_score == sum(c.max_score for c in whole.checks
                                               if c.function in ("relu_", "clamp_"))
    alone = check_submission(broken, lab="tensor_ops", sandbox=sandbox,
                             options=CheckOptions(device="cpu", functions=("softmax_",)))
    assert {c.function for c in alone.checks} == {"softmax_"}
    assert alone.score < alone.max_score


def test_a_function_the_lab_does_not_have_is_one_line(sandboxes: SharedSandboxes) -> None:
    with pytest.raises(UsageError, match="lab tensor_ops has no function 'relu'"):
        check_submission(SOLUTION, lab="tensor_ops", sandbox=sandboxes("tensor_ops"),
                         options=CheckOptions(device="cpu", functions=("relu",)))


@given(st.data())
@settings(max_examples=60, deadline=None)
def test_a_lab_narrowed_to_any_functions_keeps_their_checks_in_its_order(
        data: st.DataObject) -> None:
    from grader.labs import get_lab

    lab = get_lab(data.draw(st.sampled_from(["autograd", "modules", "optim", "tensor_ops"])))
    chosen = data.draw(st.lists(st.sampled_from(lab.functions), min_size=1, unique=True))
    narrowed = lab.only(tuple(chosen))
    assert narrowed.functions == tuple(f for f in lab.functions if f in chosen)
    assert narrowed.checks == tuple(c for c in lab.checks if c.function in chosen)
    assert {c.function for c in narrowed.checks} == set(chosen)  # each has checks


@given(st.text(min_size=1, max_size=30))
@settings(max_examples=80, deadline=None)
def test_any_exception_at_import_gets_a_hint(error_type: str) -> None:
    """A type of its own ("import_error.SystemExit") or the general one: never none, and
    never a hint left with a placeholder."""
    from grader.checks.findings import fail
    from grader.feedback import word

    finding = fail("import_error", error_type=error_type, error="boom", location="line 3",
                   filename="optimizer.py", module="", debug="")
    for lang in ("en", "ko"):
        hint = word(finding, lang).hint
        assert hint and "{" not in hint and "optimizer.py" in hint
