"""What the child reads of a tensor (grader/checks/tensors.py) as the submission cannot change
it: the comparison of values reads torch as it was when the grader was imported.

Run in a fresh interpreter, as a child is: what other tests of this run did to torch's
classes is not the state a submission starts from."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

PATCHED = """
import torch
from grader.checks import tensors

before = torch.tensor([1.0, float("nan"), 3.0])
after = torch.tensor([1.0, float("nan"), 4.0])
assert tensors.same_values(before, before.clone())  # NaN equals NaN
assert not tensors.same_values(before, after)
always = lambda *args, **kwargs: torch.ones((), dtype=torch.bool)
torch.Tensor.__eq__ = always  # what a submission can do after the grader's import
torch.Tensor.all = always
torch.isnan = always
torch.equal = lambda *args: True
assert not tensors.same_values(before, after)
assert not tensors.same_values(torch.tensor([1, 2]), torch.tensor([1, 3]))
assert tensors.same_values(torch.tensor([1, 2]), torch.tensor([1, 2]))
print("held")
"""


def test_a_patched_comparison_does_not_make_a_changed_tensor_read_untouched() -> None:
    ran = subprocess.run([sys.executable, "-c", PATCHED], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert ran.returncode == 0 and ran.stdout.strip() == "held", ran.stderr[-2000:]
