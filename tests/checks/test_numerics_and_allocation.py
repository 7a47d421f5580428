from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.checks.allocation import AllocationTracker, describe_bytes, full_size_temporaries
from grader.checks.numerics import mismatch, unravel


def test_mismatch_reports_count_location_and_tolerance() -> None:
    expected = torch.zeros(3, 4)
    actual = expected.clone()
    actual[1, 2] = 0.5
    found = mismatch(actual, expected)
    assert found is not None
    assert (found["mismatched"], found["total"], found["index"]) == (1, 12, [1, 2])
    assert found["max_abs_diff"] == 0.5 and found["atol"] == 1e-5


def test_half_precision_uses_the_spec_tolerances() -> None:
    expected = torch.ones(4, dtype=torch.float16)
    assert mismatch(expected + 3e-3, expected) is None
    assert mismatch(expected + 2e-2, expected) is not None


def test_nan_where_the_reference_has_a_number_is_a_mismatch() -> None:
    assert mismatch(torch.tensor([float("nan")]), torch.tensor([0.0])) is not None
    assert mismatch(torch.tensor([float("inf")]), torch.tensor([float("inf")])) is None


def test_tracker_names_the_op_of_a_full_size_temporary() -> None:
    p, g = torch.randn(1000), torch.randn(1000)
    with AllocationTracker() as tracker:
        p.add_(g, alpha=-0.1)
    assert full_size_temporaries(tracker.events, numel=1000) == []
    with AllocationTracker() as tracker:
        p -= 0.1 * g
    (event,) = full_size_temporaries(tracker.events, numel=1000)
    assert event["op"] == "aten::mul" and describe_bytes(event["nbytes"]) == "3.9 KB"


@settings(deadline=None)  # torch.unravel_index imports sympy on its first call
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_unravel_finds_the_index_torch_finds(shape: list[int], data: st.DataObject) -> None:
    assert unravel(0, ()) == ()  # a 0-d tensor's one element
    count = math.prod(shape)
    flat = data.draw(st.integers(0, count - 1))
    expected = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), tuple(shape)))
    assert unravel(flat, tuple(shape)) == expected
