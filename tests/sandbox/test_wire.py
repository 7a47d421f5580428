from __future__ import annotations

import json
import struct

import pytest
import torch

from grader.sandbox.wire import ALIGN, DTYPES, WireError, dumps, loads


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


def test_every_dtype_round_trips_bit_for_bit_at_aligned_offsets() -> None:
    """The body is filled by one torch copy of every tensor and its padding: each dtype's
    bytes land where its entry says, odd sizes included, grads and views detached."""
    sent = [(torch.arange(7) % 3).to(dtype) for dtype in DTYPES.values()]
    sent += [torch.randn(5, requires_grad=True), torch.randn(3, 4)[:, 1],
             torch.tensor(-0.0), torch.tensor(float("nan"), dtype=torch.float16)]
    data = dumps({"all": sent})
    back = loads(data)["all"]
    header = json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
    for got, original, entry in zip(back, sent, header["all"], strict=True):
        assert entry["__tensor__"][0] % ALIGN == 0
        assert got.dtype == original.dtype and got.shape == original.shape
        assert torch.equal(got.view(-1).view(torch.uint8),
                           original.detach().contiguous().view(-1).view(torch.uint8))


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


def _forged(entry: object) -> bytes:
    header = json.dumps({"t": {"__tensor__": entry}}).encode()
    return struct.pack("<Q", len(header)) + header + b"\0" * 64


@pytest.mark.parametrize("entry", [
    ["0", 12, "float32", [3]],          # an offset that is text
    [0.0, 12, "float32", [3]],          # a float offset
    [True, 12, "float32", [3]],         # JSON's true
    [0, 8, "float32", [-1, -2]],        # negative sizes whose product fits
    [0, 4, "float32", [1.5]],           # a fractional size
    [0, 12, "float32", "3"],            # a shape that is not a list
    [0, 12, "float32", [3], "extra"],   # too many fields
    [0, 12, "complex1024", [3]],        # no such dtype
])
def test_a_forged_tensor_entry_is_refused_not_raised_through(entry: object) -> None:
    with pytest.raises(WireError):
        loads(_forged(entry))


def _record(header: bytes, body: bytes = b"") -> bytes:
    return struct.pack("<Q", len(header)) + header + body


def test_nesting_deeper_than_the_parser_goes_is_a_wire_error_not_a_crash() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(WireError):
        loads(_record(deep))


def test_a_header_over_the_limit_is_refused_before_parsing() -> None:
    from grader.sandbox.wire import HEADER_LIMIT

    huge = json.dumps({"nonce": "x", "pad": "a" * (HEADER_LIMIT + 1)}).encode()
    with pytest.raises(WireError, match="over the"):
        loads(_record(huge))


def test_the_runner_refuses_a_file_without_the_job_nonce_or_over_the_budget(tmp_path) -> None:
    from grader.sandbox.runner import JOB_RECORDS_LIMIT, Sandbox, _Budget

    good = tmp_path / "good.pt"
    good.write_bytes(dumps({"nonce": "n1", "x": torch.ones(3)}))
    forged = tmp_path / "forged.pt"
    forged.write_bytes(dumps({"x": 1, "nonce": "n1"}))  # the nonce not first: not ours
    assert Sandbox._load(str(good), "n1", _Budget())["x"].tolist() == [1.0, 1.0, 1.0]
    assert Sandbox._load(str(good), "n2", _Budget()) is None
    assert Sandbox._load(str(forged), "n1", _Budget()) is None
    assert Sandbox._load(str(good), "n1", _Budget(left=10)) is None
    assert _Budget().left == JOB_RECORDS_LIMIT
