"""What the child reads of a tensor (grader/checks/tensors.py) as the submission cannot change
it: the comparison of values reads torch as it was when the grader was imported."""

from __future__ import annotations

import pytest
import torch

from grader.checks import tensors


def test_a_patched_comparison_does_not_make_a_changed_tensor_read_untouched(
        monkeypatch: pytest.MonkeyPatch) -> None:
    before = torch.tensor([1.0, float("nan"), 3.0])
    after = torch.tensor([1.0, float("nan"), 4.0])
    assert tensors.same_values(before, before.clone())  # NaN equals NaN
    assert not tensors.same_values(before, after)
    always = lambda *args, **kwargs: torch.ones((), dtype=torch.bool)  # noqa: E731
    monkeypatch.setattr(torch.Tensor, "__eq__", always)
    monkeypatch.setattr(torch.Tensor, "all", always)
    monkeypatch.setattr(torch, "isnan", always)
    monkeypatch.setattr(torch, "equal", lambda *args: True)
    assert not tensors.same_values(before, after)
    assert not tensors.same_values(torch.tensor([1, 2]), torch.tensor([1, 3]))
    assert tensors.same_values(torch.tensor([1, 2]), torch.tensor([1, 2]))
