from __future__ import annotations

import pytest
import torch

from grader.sandbox.wire import ALIGN, WireError, dumps, loads


def test_tensors_and_plain_data_round_trip() -> None:
    record = {"values": [torch.randn(3, 4), torch.tensor(2.5, dtype=torch.bfloat16),
                         torch.zeros(0, 5), torch.ones(2, dtype=torch.bool)],
              "view": torch.randn(6, 4).t(), "plain": {"nan": float("nan"), "none": None,
                                                      "pair": (1, "a"), "flag": True}}
    back = loads(dumps(record))
    for got, sent in zip(back["values"], record["values"], strict=True):
        assert got.dtype == sent.dtype and torch.equal(got, sent)
    assert torch.equal(back["view"], record["view"])
    assert back["plain"]["pair"] == [1, "a"] and back["plain"]["none"] is None


def test_objects_travel_as_text_never_as_objects() -> None:
    class Sneaky:
        def __repr__(self) -> str:
            return "sneaky"

    assert loads(dumps({"x": Sneaky()})) == {"x": "sneaky"}


@pytest.mark.parametrize("data", [b"", b"\x05\0\0\0\0\0\0\0{", b"\x02\0\0\0\0\0\0\0{]"])
def test_malformed_bytes_are_refused(data: bytes) -> None:
    with pytest.raises(WireError):
        loads(data)


def test_a_tensor_pointing_outside_the_body_is_refused() -> None:
    data = dumps({"t": torch.randn(3)})  # 12 bytes, padded to ALIGN
    with pytest.raises(WireError, match="out of range"):
        loads(data[:-ALIGN])
