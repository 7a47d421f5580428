"""The outside witness: the caller's tensors live in a file the grading process reads itself.

Everything the child records is written by a process that ran student code. For what memory can
show, the grading process does not have to believe it: a task's witnessed inputs (the tensors a
function must update in place, on the CPU) are views of one shared mapping of a file, the
*arena*, which the child opens and maps before its file-system view closes, in the job's folder
that the student's code cannot write. An in-place write lands in the file; a rebind
(`p.data = ...`) leaves it as it was. After the job the grading process reads the arena: the
values and storage verdicts are judged on it, and a record that disagrees with it is tampering.

Both sides compute the arena's layout from the cases alone (`Lab.witnessed`: a dtype and a
shape per witnessed tensor, in order), so nothing about it travels from the child.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch

from grader.checks.dtypes import DTYPES

ALIGN = 64
Spec = tuple[str, tuple[int, ...]]  # (dtype name, shape) of one witnessed tensor
Specs = Callable[[dict[str, Any]], list[Spec]]  # a case's witnessed tensors, in order
Witnessed = Callable[[str, dict[str, Any]], list[Spec]]  # the same, for (function, case)


@dataclass(frozen=True)
class Slot:
    case: str
    index: int
    offset: int
    dtype: torch.dtype
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


def layout(cases: Iterable[dict[str, Any]], specs: Specs) -> list[Slot]:
    """Where each witnessed tensor of each case lives in the arena."""
    slots: list[Slot] = []
    offset = 0
    for case in cases:
        for index, (dtype, shape) in enumerate(specs(case)):
            slot = Slot(case["id"], index, offset, DTYPES[dtype], tuple(shape))
            slots.append(slot)
            offset += slot.nbytes + (-slot.nbytes % ALIGN)
    return slots


def size(slots: list[Slot]) -> int:
    return max((slot.offset + slot.nbytes for slot in slots), default=0)


class Arena:
    """Child side: the mapped arena of one task, opened before the view closes."""

    def __init__(self, path: str, slots: list[Slot]) -> None:
        self._slots = {(slot.case, slot.index): slot for slot in slots}
        self._memory: Any = None  # the whole file, mapped shared (a numpy view of it)
        total = size(slots)
        if not path or not total:
            return
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.ftruncate(fd, total)
        finally:
            os.close(fd)
        # torch maps the file and closes its descriptor; Python's mmap keeps a duplicate open,
        # through which the submission could write the memory the grader reads back.
        self._memory = torch.from_file(path, shared=True, size=total, dtype=torch.uint8).numpy()

    def share(self, case: str, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
        """`tensors` (fresh CPU inputs of `case`) moved into the arena: same values, dtype,
        shape and `requires_grad`, their memory now the file's. Each is a tensor of its own
        (not a view: its own version counter, no `_base`, a leaf), over its own storage.
        Unwitnessed cases: as they are."""
        if self._memory is None or (case, 0) not in self._slots:
            return tensors
        shared = []
        for index, tensor in enumerate(tensors):
            slot = self._slots[(case, index)]
            count = math.prod(slot.shape)
            if count == 0:
                shared.append(tensor)
                continue
            memory = torch.frombuffer(self._memory, dtype=slot.dtype, count=count,
                                      offset=slot.offset).untyped_storage()
            own = torch.empty(0, dtype=slot.dtype).set_(memory, 0, slot.shape,
                                                        _contiguous(slot.shape))
            with torch.no_grad():
                own.copy_(tensor)  # our own arena
            shared.append(own.requires_grad_(tensor.requires_grad))
        return shared


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides: list[int] = []
    step = 1
    for extent in reversed(shape):
        strides.insert(0, step)
        step *= max(extent, 1)
    return tuple(strides)


NO_ARENA = Arena("", [])  # a task with nothing witnessed (CUDA, or no in-place inputs)


def read(path: str, slots: list[Slot]) -> dict[str, list[torch.Tensor]]:
    """Grading-process side: each witnessed case's final tensors, by case id; {} where the
    arena is missing or short (a child that died before mapping it: nothing to judge)."""
    total = size(slots)
    try:
        with open(path, "rb") as handle:
            data = bytearray(handle.read(total))
    except OSError:
        if total:
            return {}
        data = bytearray()  # only empty tensors: the child had no arena to create
    if len(data) < total:
        return {}
    witnessed: dict[str, list[torch.Tensor]] = {}
    for slot in slots:
        tensor = (torch.frombuffer(data, dtype=slot.dtype, count=math.prod(slot.shape),
                                   offset=slot.offset).reshape(slot.shape)
                  if slot.nbytes else torch.empty(slot.shape, dtype=slot.dtype))
        witnessed.setdefault(slot.case, []).append(tensor)
    return witnessed
