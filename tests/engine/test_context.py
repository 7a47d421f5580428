"""What a grading is fixed against (grader/engine/context.py): here, grading some of a lab's
functions only."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.engine import CheckOptions, check_submission
from grader.errors import UsageError
from tests.conftest import ROOT, SharedSandboxes

SOLUTION = ROOT / "solutions" / "tensor_ops" / "tensor_ops.py"


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
