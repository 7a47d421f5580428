"""The outside memory meter: a call's peak resident memory, read by the zygote, not the child.

The in-process meters (the dispatch tracker, the profiler, tracemalloc) run next to the
submission, which can see them (`torch._C._len_torch_dispatch_stack()`, the profiler's flag)
and write in place only while they are on. The kernel keeps a peak of every process's resident
set (`VmHWM` in /proc/PID/status) that the process's owner can reset by writing `5` to
/proc/PID/clear_refs. So around a call the child asks the zygote, on its progress pipe, to open
a window (`M`): the zygote resets the child's peak and reads the baseline, then answers on a
pipe of its own; after the call the child closes the window (`m`) and the zygote reads the
peak. The number never passes through the child: it goes from the zygote to the grading
process in the task's outcome, and the judges read it there.

The child cannot write its own clear_refs (its file-system view grants /proc for reading only,
and the audit hook refuses the name), and a line it forges on the pipe changes the number of
windows, which the grading process compares with the probes' own count (`windows_problem`).
A window is measured only where the zygote may reset the peak (Linux with /proc); elsewhere
the answer says so and the probes keep their in-process meters.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from grader.sandbox.audit import INTEGRITY_EVENT

MEASURED, UNMEASURED, CLOSED = b"1", b"0", b"m"  # the zygote's answers to `M`, and to `m`
WINDOWS_LIMIT = 4096  # windows per task; more is a protocol violation


# --- zygote side ---------------------------------------------------------------------------

def reset_peak(pid: int) -> int | None:
    """Reset `pid`'s peak resident set to its current one; that baseline in KiB, or None
    where this host does not let the zygote do it."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        return None
    return peak_kib(pid)


def peak_kib(pid: int) -> int | None:
    """`pid`'s peak resident set since its last reset (`VmHWM`), in KiB."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


# --- child side ----------------------------------------------------------------------------

# Taken when the zygote imports this module, before any submission exists (and watched by
# the tamper watch with the rest of the grader's module globals).
_read, _write, _audit = os.read, os.write, sys.audit


class OutsideMeter:
    """Child side: `measure(call)` runs the call inside one window and says which window it
    was, so that the grading process can find the zygote's reading. Each line waits for the
    zygote's own answer; an answer that does not come as it must (the pipe made non-blocking,
    a byte planted or taken) is an integrity finding, and the call is then not measured."""

    def __init__(self, progress_fd: int = -1, answer_fd: int = -1) -> None:
        self._progress, self._answer = progress_fd, answer_fd
        self.windows = 0

    def measure(self, call: Callable[[], Any]) -> tuple[Any, int | None, bool]:
        """(what the call returned, its window, whether the zygote measures it)."""
        if self._progress < 0:
            return call(), None, False
        measured = self._ask(b"M\n", (MEASURED, UNMEASURED)) == MEASURED
        try:
            result = call()
        finally:
            self._ask(b"m\n", (CLOSED,))
        window = self.windows
        self.windows += 1
        return result, window, measured

    def _ask(self, line: bytes, answers: tuple[bytes, ...]) -> bytes:
        try:
            _write(self._progress, line)
            answer = _read(self._answer, 1)
        except OSError as exc:
            answer = f"{type(exc).__name__}".encode()
        if answer not in answers:
            _audit(INTEGRITY_EVENT, f"the outside memory meter's answers were tampered with "
                                    f"(got {answer!r})")
            return UNMEASURED
        return answer


NO_METER = OutsideMeter()  # in-process runs of the probes (tests): nothing outside to ask


# --- grading-process side ------------------------------------------------------------------

def windows_problem(windows: list[list[int]], peaks: list[int | None]) -> str | None:
    """None if the probes' windows, case by case in order, are exactly the zygote's windows
    (0, 1, ... n-1, each once); else what differs. A line forged on the pipe opens or closes a
    window the probes never asked for."""
    used = [index for case in windows for index in case]
    if used != list(range(len(peaks))):
        return (f"the probes used {len(used)} measured calls, the zygote measured "
                f"{len(peaks)}")
    return None


def peak_bytes(peaks: list[int | None], window: int | None) -> int | None:
    """A window's peak above its baseline, in bytes; None where it was not measured."""
    if window is None or not 0 <= window < len(peaks):
        return None
    peak = peaks[window]
    return None if peak is None else peak * 1024
