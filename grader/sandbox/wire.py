"""The format observations travel in from the child: JSON plus raw tensor bytes.

Safer and much faster than pickling (even torch's weights-only unpickler is a pure-Python
interpreter: docs/sandbox.md#numbers-behind-the-code). Loading runs no code: JSON, then
`torch.frombuffer` on byte ranges whose sizes are checked.

Layout: 8-byte little-endian length of the JSON header, the header, then the tensor bytes.
A tensor in the header is `{"__tensor__": [offset, nbytes, dtype, shape]}`; each offset is a
multiple of ALIGN (the bytes are padded), so a tensor is a view of the body, not a copy.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import torch

TENSOR = "__tensor__"
ALIGN = 16  # bytes; every tensor's offset in the body is a multiple
SEPARATORS = (",", ":")  # compact JSON: smaller records (docs/sandbox.md#numbers-behind-the-code)
DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
    torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)}


# Captured before any submission can patch them: what encoding a record calls on a tensor.
_detach, _to, _contiguous = (torch._C.TensorBase.detach, torch._C.TensorBase.to,
                             torch._C.TensorBase.contiguous)
_view, _reshape = torch._C.TensorBase.view, torch._C.TensorBase.reshape
_numel, _element_size = torch._C.TensorBase.numel, torch._C.TensorBase.element_size
_resolve_conj, _resolve_neg = torch._C.TensorBase.resolve_conj, torch._C.TensorBase.resolve_neg
_frombuffer, _uint8, _cat, _zeros = torch.frombuffer, torch.uint8, torch.cat, torch.zeros
_ITEMSIZE = {dtype: torch.empty((), dtype=dtype).element_size() for dtype in DTYPES.values()}


class WireError(ValueError):
    """The bytes are not a well-formed observation file."""


def dumps(record: Any) -> bytes:
    """Encode `record`; json's C encoder walks it, and calls back only for tensors (and for
    anything else that is not JSON, which arrives as text, never as an object).

    Each tensor's bytes are copied by torch into its aligned place in one body buffer: no
    ctypes read per tensor (in the child, each raised an audit event whose hook walks the
    stack to see who asked; a few hundred tensors a record cost milliseconds)."""
    tensors: list[torch.Tensor] = []  # flat uint8 views, and the padding after each
    offset = 0

    def tensor_entry(value: Any) -> Any:
        nonlocal offset
        if not isinstance(value, torch.Tensor):
            return repr(value)[:200]
        tensor = _contiguous(_resolve_neg(_resolve_conj(_to(_detach(value), "cpu"))))
        nbytes = _numel(tensor) * _element_size(tensor)
        entry = [offset, nbytes, str(tensor.dtype).removeprefix("torch."), list(tensor.shape)]
        padding = -nbytes % ALIGN  # each tensor starts aligned: loads views it
        if nbytes:
            tensors.append(_view(_view(tensor, -1), _uint8))
        if padding:  # made here: nothing the submission can reach decides these bytes
            tensors.append(_zeros(padding, dtype=_uint8))
        offset += nbytes + padding
        return {TENSOR: entry}

    header = json.dumps(record, default=tensor_entry, separators=SEPARATORS).encode()
    body = bytearray(offset)
    if tensors:  # one copy of every tensor's bytes, padding included, into the body
        _cat(tensors, out=_frombuffer(body, dtype=_uint8))
    return struct.pack("<Q", len(header)) + header + bytes(body)


# A child writes these files, so their size is the child's to choose: the grading process
# parses at most this much JSON per record, well above an honest record's header
# (docs/sandbox.md#numbers-behind-the-code).
HEADER_LIMIT = 1024**2


def stamp(nonce: str) -> bytes:
    """How every record's header starts: its nonce comes first (the child's header dict puts
    it there), so a reader can refuse a forged file before reading the rest of it."""
    return json.dumps({"nonce": nonce}, separators=SEPARATORS)[:-1].encode()


def token_field(token: str) -> bytes:
    """What follows the stamp in a task's record: its token (the header dict's second key)."""
    return ("," + json.dumps({"token": token}, separators=SEPARATORS)[1:-1]).encode()


def header_length(start: bytes) -> int:
    """The header length from a record's first 8 bytes."""
    if len(start) < 8:
        raise WireError("truncated")
    return int(struct.unpack("<Q", start[:8])[0])


def loads(data: bytes, *, header_limit: int = HEADER_LIMIT) -> Any:
    """Decode a record. Raises WireError for anything malformed or over the limits: a header
    longer than `header_limit`, nesting deeper than the parser's recursion limit, a tensor
    entry that does not fit the body. Never another exception type."""
    length = header_length(data)
    if length > len(data) - 8:
        raise WireError("truncated header")
    if length > header_limit:
        raise WireError(f"header of {length} bytes, over the {header_limit} the grader reads")
    body = bytearray(memoryview(data)[8 + length:])  # one copy, writable: tensors view it

    def tensors(obj: dict[str, Any]) -> Any:  # called by the C parser for each object
        return _tensor(obj[TENSOR], body) if TENSOR in obj else obj

    try:
        return json.loads(data[8:8 + length], object_hook=tensors)
    except WireError:
        raise
    except (ValueError, RecursionError, MemoryError) as exc:  # nesting past the C parser's limit
        raise WireError(f"bad header: {type(exc).__name__}") from exc


def _is_count(value: Any) -> bool:
    """A non-negative int (JSON's true is an int to Python, not to us)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _tensor(entry: Any, body: bytearray) -> torch.Tensor:
    try:
        offset, nbytes, dtype_name, shape = entry
        dtype = DTYPES[dtype_name]
    except (ValueError, TypeError, KeyError) as exc:
        raise WireError(f"bad tensor entry {entry!r}") from exc
    # The file is written by the student's process: every number is checked, not trusted.
    # (Each size is _is_count's test written out: a call per size, hundreds a record, showed.)
    if not (_is_count(offset) and _is_count(nbytes) and type(shape) is list
            and all(type(size) is int and size >= 0 for size in shape)):
        raise WireError(f"bad tensor entry {entry!r}")
    itemsize = _ITEMSIZE[dtype]
    if (nbytes != math.prod(shape) * itemsize or offset + nbytes > len(body)
            or offset % ALIGN):
        raise WireError(f"tensor bytes out of range: {entry!r}")
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype)
    flat = _frombuffer(body, dtype=dtype, count=nbytes // itemsize, offset=offset)
    return flat if len(shape) == 1 else _reshape(flat, shape)  # 1-D: already its shape
