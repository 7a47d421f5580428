"""The outside memory meter: the zygote's reading of a call's peak, the windows' bookkeeping,
the progress protocol's M/m lines, and the judge that compares it with the meters inside."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.checks.allocation import judge_allocations
from grader.engine.outcomes import measured_outside
from grader.sandbox import outside_meter
from grader.sandbox.outside_meter import (
    CLOSED,
    MEASURED,
    UNMEASURED,
    peak_bytes,
    peak_kib,
    reset_peak,
    windows_problem,
)
from grader.sandbox.runner import TaskSpec
from grader.sandbox.zygote import Progress, ProtocolViolation

# --- windows_problem and peak_bytes --------------------------------------------------------


def _split(total: int, cuts: list[int]) -> list[list[int]]:
    """range(total) cut into consecutive cases at `cuts` (some cases empty)."""
    edges = sorted({0, total, *(cut % (total + 1) for cut in cuts)})
    return [list(range(a, b)) for a, b in itertools.pairwise(edges)] or [[]]


@given(st.integers(0, 40), st.lists(st.integers(0, 40), max_size=6))
def test_the_probes_windows_in_order_match(total: int, cuts: list[int]) -> None:
    assert windows_problem(_split(total, cuts), [0] * total) is None


@given(st.integers(1, 40), st.lists(st.integers(0, 40), max_size=6), st.data())
def test_a_window_forged_dropped_or_reordered_is_a_problem(total: int, cuts: list[int],
                                                           data: st.DataObject) -> None:
    windows = _split(total, cuts)
    change = data.draw(st.sampled_from(["forged", "dropped", "doubled", "swapped"]))
    peaks: list[int | None] = [0] * total
    if change == "forged":  # a window the zygote measured that no probe asked for
        peaks.append(0)
    elif change == "dropped":
        peaks.pop()
    elif change == "doubled":
        windows[-1] = [*windows[-1], total - 1]
    else:
        flat = [index for case in windows for index in case]
        if len(flat) < 2:
            peaks.append(0)
        else:
            windows = [[flat[1], flat[0], *flat[2:]]]
    problem = windows_problem(windows, peaks)
    assert problem is not None and "measured calls" in problem


@given(st.lists(st.one_of(st.none(), st.integers(0, 1 << 20)), max_size=8),
       st.one_of(st.none(), st.integers(-3, 10)))
def test_peak_bytes_is_the_zygotes_reading_or_none(peaks: list[int | None],
                                                   window: int | None) -> None:
    found = peak_bytes(peaks, window)
    if window is None or not 0 <= window < len(peaks) or peaks[window] is None:
        assert found is None
    else:
        assert found == peaks[window] * 1024  # type: ignore[operator]


# --- the progress protocol's M and m -------------------------------------------------------

_LAYERS = 'P {"layers": [], "static": {}}'


def _in_task() -> Progress:
    progress = Progress(next_task=0, tasks=2)
    progress.accept(_LAYERS)
    progress.accept("I")
    progress.accept("S 0")
    return progress


def test_a_window_opens_and_closes_inside_a_task() -> None:
    progress = _in_task()
    assert [progress.accept(line) for line in ("M", "m", "M", "m", "D 0")] == \
        ["M", "m", "M", "m", "D"]


@pytest.mark.parametrize("lines", [
    ["m"],              # closed before it opened
    ["M", "M"],         # two at once
    ["M", "D 0"],       # the task ends inside a window
    ["D 0", "M"],       # between tasks
    ["M 3"],            # a window carries nothing
])
def test_a_window_line_out_of_order_ends_the_child(lines: list[str]) -> None:
    progress = _in_task()
    with pytest.raises(ProtocolViolation):
        for line in lines:
            progress.accept(line)


def test_a_window_before_the_first_task_ends_the_child() -> None:
    progress = Progress(next_task=0, tasks=1)
    progress.accept(_LAYERS)
    progress.accept("I")
    with pytest.raises(ProtocolViolation):
        progress.accept("M")


def test_more_windows_than_the_limit_end_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outside_meter, "WINDOWS_LIMIT", 3)
    progress = _in_task()
    progress.windows[0] = [0, 0, 0]
    with pytest.raises(ProtocolViolation, match="more measured calls"):
        progress.accept("M")


# --- a real reading: a process's temporary seen from outside it ----------------------------

_CHILD = textwrap.dedent("""
    import sys, torch
    from grader.sandbox.outside_meter import OutsideMeter
    meter = OutsideMeter(int(sys.argv[1]), int(sys.argv[2]))
    x = torch.ones(1024, 1024)                 # 4 MiB
    x.add_(1.0); (x * 2.0).sum()              # first calls initialise torch's kernels
    _, first, _ = meter.measure(lambda: x.add_(1.0))
    _, second, _ = meter.measure(lambda: x.copy_(x * 2.0 + 1.0))  # two 4 MiB temporaries
    print(first, second)
""")


def _meter_a_child() -> tuple[list[int | None], str]:
    """Run _CHILD, answering its windows as the zygote does; the peaks (KiB) and its output."""
    progress_read, progress_write = os.pipe()
    answer_read, answer_write = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(progress_write),
                              str(answer_read)], pass_fds=(progress_write, answer_read),
                             stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "OMP_NUM_THREADS": "1"})
    os.close(progress_write)
    os.close(answer_read)
    peaks: list[int | None] = []
    baseline: int | None = None
    with os.fdopen(progress_read, "rb") as lines:
        for line in lines:
            if line == b"M\n":
                baseline = reset_peak(child.pid)
                os.write(answer_write, UNMEASURED if baseline is None else MEASURED)
            elif line == b"m\n":
                peak = peak_kib(child.pid)
                peaks.append(None if peak is None or baseline is None else peak - baseline)
                os.write(answer_write, CLOSED)
    out, _ = child.communicate(timeout=60)
    os.close(answer_write)
    return peaks, out


@pytest.mark.skipif(reset_peak(os.getpid()) is None,
                    reason="this host does not let a process reset a peak resident set")
def test_the_zygotes_reading_sees_a_temporary_and_not_an_in_place_write() -> None:
    (in_place, temporaries), out = _meter_a_child()
    assert out.split() == ["0", "1"]
    assert in_place is not None and temporaries is not None
    assert in_place < 1024  # KiB: the interpreter's own noise, far below one 4 MiB tensor
    assert temporaries >= 4 * 1024


def test_without_a_pipe_the_call_runs_unmeasured() -> None:
    assert outside_meter.NO_METER.measure(lambda: 7) == (7, None, False)


@pytest.mark.parametrize("planted", [b"", b"1m", b"mm", b"xm", b"1x"])
def test_answers_that_do_not_come_as_they_must_are_an_integrity_finding(
        monkeypatch: pytest.MonkeyPatch, planted: bytes) -> None:
    """A byte planted ahead of the zygote's answers, or a pipe made non-blocking so that the
    call need not wait for the reset, is reported and the call counts as unmeasured."""
    reported: list[str] = []
    monkeypatch.setattr(outside_meter, "_audit", lambda event, what: reported.append(what))
    progress_read, progress_write = os.pipe()
    answer_read, answer_write = os.pipe()
    try:
        if planted:
            os.write(answer_write, planted)
        else:
            os.set_blocking(answer_read, False)  # nothing to read: EAGAIN
        meter = outside_meter.OutsideMeter(progress_write, answer_read)
        result, window, measured = meter.measure(lambda: 7)
        planted_in_order = planted == MEASURED + CLOSED
        assert result == 7 and window == 0
        assert measured == (planted[:1] == MEASURED)
        assert bool(reported) != planted_in_order, reported
        assert os.read(progress_read, 16) == b"M\nm\n"
    finally:
        for fd in (progress_read, progress_write, answer_read, answer_write):
            os.close(fd)


# --- the grading process: windows to records, records to a verdict -------------------------


def _observed(nbytes: int, outside: int | None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "error": None, "allocations": [], "numel": nbytes // 4, "nbytes": nbytes,
        "host_peak_bytes": 0, "profiler_peak_bytes": 0, "profiler_peak_op": None}
    if outside is not None:
        record["outside_peak_bytes"] = outside
    return record


@pytest.mark.parametrize(("outside", "verdict"), [
    (None, "pass"), (0, "pass"), (200_000, "pass"), (2 << 20, "metered_differently")])
def test_only_a_full_size_peak_outside_fails(outside: int | None, verdict: str) -> None:
    finding = judge_allocations(_observed(1 << 20, outside), function="sgd_step",
                                tensor="params[0]")
    assert (finding.key if not finding.passed else "pass") == verdict


def test_the_grading_process_hands_each_record_its_own_window() -> None:
    task = TaskSpec(function="sgd_step", device="cpu", cases=[{"id": "a"}, {"id": "b"}])
    observed = {"a": {"outside_windows": [0]}, "b": {"outside_windows": [1]}}
    assert measured_outside(task, observed, [4, None]) is None
    assert observed["a"]["outside_peak_bytes"] == 4096
    assert observed["b"]["outside_peak_bytes"] is None


def test_a_forged_window_is_an_integrity_finding() -> None:
    task = TaskSpec(function="sgd_step", device="cpu", cases=[{"id": "a"}])
    observed = {"a": {"outside_windows": [0]}}
    finding = measured_outside(task, observed, [0, 4096])
    assert finding is not None and finding.key == "integrity"
    assert "outside_peak_bytes" not in observed["a"]
