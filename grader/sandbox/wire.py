"""The format observations travel in from the child: JSON plus raw tensor bytes.

Safer and much faster than pickling (even torch's weights-only unpickler is a pure-Python
interpreter, about 90 ms for one submission's few hundred small tensors). Loading runs no
code: JSON, then `torch.frombuffer` on byte ranges whose sizes are checked.

Layout: 8-byte little-endian length of the JSON header, the header, then the tensor bytes.
A tensor in the header is `{"__tensor__": [offset, nbytes, dtype, shape]}`.
"""

from __future__ import annotations

import ctypes
import json
import math
import struct
from typing import Any

import torch

TENSOR = "__tensor__"
DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
    torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)}


_data_ptr = torch._C.TensorBase.data_ptr  # captured before any submission can patch it
_ITEMSIZE = {dtype: torch.empty((), dtype=dtype).element_size() for dtype in DTYPES.values()}


class WireError(ValueError):
    """The bytes are not a well-formed observation file."""


def dumps(record: Any) -> bytes:
    blobs: list[bytes] = []
    offset = 0

    def encode(value: Any) -> Any:
        nonlocal offset
        if isinstance(value, torch.Tensor):
            tensor = value.detach().to("cpu").contiguous()
            nbytes = tensor.numel() * tensor.element_size()
            data = ctypes.string_at(_data_ptr(tensor), nbytes) if nbytes else b""
            entry = [offset, nbytes, str(tensor.dtype).removeprefix("torch."),
                     list(tensor.shape)]
            blobs.append(data)
            offset += nbytes
            return {TENSOR: entry}
        if isinstance(value, dict):
            return {str(k): encode(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [encode(v) for v in value]
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        return repr(value)[:200]  # anything else arrives as text, never as an object

    header = json.dumps(encode(record)).encode()
    return struct.pack("<Q", len(header)) + header + b"".join(blobs)


def loads(data: bytes) -> Any:
    if len(data) < 8:
        raise WireError("truncated")
    (length,) = struct.unpack("<Q", data[:8])
    if length > len(data) - 8:
        raise WireError("truncated header")
    body = memoryview(data)[8 + length:]

    def tensors(obj: dict[str, Any]) -> Any:  # called by the C parser for each object
        return _tensor(obj[TENSOR], body) if TENSOR in obj else obj

    try:
        return json.loads(data[8:8 + length], object_hook=tensors)
    except ValueError as exc:  # WireError included
        if isinstance(exc, WireError):
            raise
        raise WireError(f"bad header: {exc}") from exc


def _tensor(entry: Any, body: memoryview) -> torch.Tensor:
    try:
        offset, nbytes, dtype_name, shape = entry
        dtype = DTYPES[dtype_name]
        shape = [int(s) for s in shape]
    except (ValueError, TypeError, KeyError) as exc:
        raise WireError(f"bad tensor entry {entry!r}") from exc
    itemsize = _ITEMSIZE[dtype]
    if nbytes != math.prod(shape) * itemsize or offset < 0 or offset + nbytes > len(body):
        raise WireError(f"tensor bytes out of range: {entry!r}")
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype)
    raw = bytearray(body[offset:offset + nbytes])
    return torch.frombuffer(raw, dtype=torch.uint8).view(dtype).reshape(shape)
