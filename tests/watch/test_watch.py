"""`check --watch` (grader/watch): the loop driven through saves of real files, with a real
sandbox worker; its screen; and the command, stopped by Ctrl-C."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from grader.engine import CheckOptions
from grader.models import CheckResult, Report
from grader.watch import Run, changes, watch_submission
from grader.watch.screen import draw

BUG = ("p.add_(p.grad, alpha=-lr)", "p = p - lr * p.grad")  # sgd_step writes nothing
WAIT_S = 60  # for one run on a loaded machine (the first one starts the worker)
QUIET_S = 1.5  # longer than the loop's event step and its first look at the file


def children(pid: int) -> set[int]:
    """The processes whose parent is `pid` (read from /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # gone meanwhile
                continue
            if int(fields[1]) == pid:
                found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Watching:
    """The library loop in a thread: each run in a queue, and its screen drawn as text."""

    def __init__(self, path: Path) -> None:
        self.runs: queue.Queue[Run] = queue.Queue()
        self.stop = threading.Event()
        self.screen = StringIO()
        console = Console(file=self.screen, width=200, highlight=False)

        def on_run(run: Run) -> None:
            draw(run, console, lang="en")
            self.runs.put(run)

        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._watch, args=(path, on_run))

    def _watch(self, path: Path, on_run) -> None:
        try:
            watch_submission(path, lab="optim", options=CheckOptions(device="cpu"),
                             on_run=on_run, stop_event=self.stop, fast_answers=True,
                             preload=())
        except BaseException as exc:  # told by the test, not lost in the thread
            self.errors.append(exc)

    def next(self) -> Run:
        return self.runs.get(timeout=WAIT_S)

    def none_within(self, seconds: float) -> bool:
        try:
            self.runs.get(timeout=seconds)
        except queue.Empty:
            return True
        return False


def save(path: Path, text: str) -> None:
    """As an editor that saves by rename does: a new file moved over the old one."""
    temporary = path.with_name(f".{path.name}.swp")
    temporary.write_text(text)
    os.replace(temporary, path)


@pytest.mark.slow
def test_saves_are_graded_again_with_what_changed(tmp_path: Path, solution_source: str) -> None:
    path = tmp_path / "optimizer.py"
    path.write_text(solution_source.replace(*BUG))
    watching = Watching(path)
    before = children(os.getpid())
    watching.thread.start()
    try:
        first = watching.next()
        assert first.number == 1 and first.report is not None and first.changes is None
        failed = {c.id for c in first.report.checks if c.status == "failed"}
        assert failed and all(check.startswith("sgd_step.") for check in failed)

        worker = children(os.getpid()) - before
        assert len(worker) == 1
        os.kill(worker.pop(), signal.SIGKILL)  # a worker that died: the next run starts another
        save(path, solution_source)  # the fix
        fixed = watching.next()
        assert fixed.report is not None and fixed.report.score == fixed.report.max_score
        assert fixed.changes is not None and not fixed.changes.newly_failing
        assert {c.id for c in fixed.changes.newly_passing} == failed

        save(path, solution_source)  # the same content: no run
        assert watching.none_within(QUIET_S)

        save(path, solution_source + "\ndef broken(:\n")
        broken = watching.next()
        assert broken.report is None and broken.import_failure is not None
        assert broken.import_failure.error_type == "SyntaxError"

        path.unlink()  # mid-save: one line, and the loop waits
        missing = watching.next()
        assert missing.report is None and "no such file" in missing.problem
        save(path, solution_source)
        back = watching.next()
        assert back.report is not None and back.report.score == back.report.max_score
        assert back.changes is not None and not back.changes.newly_passing
    finally:
        watching.stop.set()
        watching.thread.join(timeout=WAIT_S)
    assert not watching.thread.is_alive() and watching.errors == []
    assert not any(alive(pid) for pid in children(os.getpid()) - before)  # the worker closed
    screen = watching.screen.getvalue()
    assert "Since the last run: 7 newly passing, 0 newly failing." in screen
    assert "✓ sgd_step computes p - lr * p.grad" in screen
    assert "Fix the error above and save the file again." in screen
    assert "Your submission could not be graded:" in screen
    assert screen.count("Watching optimizer.py: it is graded again each time you save it.") == 5


def _check(check_id: str, status: str, device: str = "cpu") -> CheckResult:
    return CheckResult(id=check_id, name=f"{check_id} holds", function=check_id.split(".")[0],
                       kind="runtime", device=device, status=status,  # type: ignore[arg-type]
                       passed=None if status == "skipped" else status == "passed",
                       score=1.0 if status == "passed" else 0.0, max_score=1.0)


def _report(*checks: CheckResult) -> Report:
    return Report(lab="optim", submission="optimizer.py", rubric_key="", score=0.0,
                  max_score=float(len(checks)), checks=list(checks), protections=[],
                  grader_version="0", torch_version="0", elapsed_s=0.0)


def test_changes_compare_each_check_on_each_device() -> None:
    before = _report(_check("f.a", "failed"), _check("f.b", "passed"), _check("f.c", "failed"),
                     _check("f.a", "skipped", "cuda"))
    after = _report(_check("f.a", "passed"), _check("f.b", "failed"), _check("f.c", "failed"),
                    _check("f.a", "passed", "cuda"), _check("f.new", "passed"))
    found = changes(before, after)
    assert [(c.id, c.device) for c in found.newly_passing] == [("f.a", "cpu")]
    assert [(c.id, c.device) for c in found.newly_failing] == [("f.b", "cpu")]


def test_the_screen_lists_a_few_names_then_a_count(tmp_path: Path) -> None:
    many = [_check(f"f.c{index}", "failed") for index in range(11)]
    fixed = [_check(f"f.c{index}", "passed") for index in range(11)]
    run = Run(number=2, lab="optim", path=tmp_path / "optimizer.py", problem="it is empty",
              changes=changes(_report(*many), _report(*fixed)))
    for lang, since, more in (("en", "Since the last run: 11 newly passing, 0 newly failing.",
                               "… and 3 more"),
                              ("ko", "지난 채점 이후: 새로 통과한 검사 11개, 새로 실패한 검사 0개.",
                               "… 외 3개")):
        screen = StringIO()
        draw(run, Console(file=screen, width=200), lang=lang)
        text = screen.getvalue()
        assert since in text and more in text
        assert "f.c7 holds" in text and "f.c8 holds" not in text


def test_watch_prints_text_or_json_only(tmp_path: Path) -> None:
    path = tmp_path / "optimizer.py"
    path.write_text("x = 1\n")
    ran = subprocess.run([sys.executable, "-m", "grader", "check", str(path), "--watch",
                          "--format", "junit"], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2
    assert ran.stderr.startswith("inplace-grader: error: --watch prints text or json")


@pytest.mark.slow
def test_the_command_prints_a_json_line_per_run_and_ctrl_c_ends_it_with_0(
        tmp_path: Path, solution_source: str) -> None:
    path = tmp_path / "optimizer.py"
    path.write_text(solution_source.replace(*BUG))
    command = [sys.executable, "-m", "grader", "check", str(path), "--watch", "--format",
               "json", "--device", "cpu"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as process:
        try:
            lines = [_line(process)]
            save(path, solution_source)
            lines.append(_line(process))
            workers = children(process.pid)
            time.sleep(0.5)  # back to waiting for a save
            os.kill(process.pid, signal.SIGINT)  # this process only, not its group
            assert process.wait(timeout=WAIT_S) == 0, process.stderr.read()
        finally:
            if process.poll() is None:
                process.kill()
        assert process.stdout is not None and process.stdout.read() == ""
    first, second = (json.loads(line) for line in lines)
    assert first["score"] < first["max_score"] and second["score"] == second["max_score"]
    assert workers and not any(alive(pid) for pid in workers)  # its worker closed with it


def _line(process: subprocess.Popen[str]) -> str:
    """The next line of `process`'s stdout, within WAIT_S."""
    assert process.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: lines.put(process.stdout.readline()), daemon=True)
    reader.start()
    line = lines.get(timeout=WAIT_S)
    assert line.endswith("\n") and "\n" not in line[:-1]
    return line
