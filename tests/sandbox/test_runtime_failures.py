"""A hang, an exit or a crash costs only the function that did it; import failures score 0."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from grader.engine import CheckOptions, check_submission
from grader.models import Limits, Report
from tests.conftest import SharedSandboxes

ZERO_GRAD_BODY = "    for p in params:\n        if p.grad is None:\n            continue\n"


@pytest.fixture
def grade(sandboxes: SharedSandboxes) -> Callable[..., Report]:
    """`check`'s route: its sandbox (no preload), shared, each submission in a fresh child."""

    def graded(path: Path, timeout_s: float = 60.0) -> Report:
        options = CheckOptions(device="cpu", limits=Limits(timeout_s=timeout_s), lang="en")
        return check_submission(path, lab="optim", options=options,
                                sandbox=sandboxes("optim", preload=False))

    return graded


def told(report, function: str) -> str:
    """What the failed checks of `function` say (a submission's error message shows there)."""
    return " ".join(c.message + " " + c.got for c in report.checks
                    if c.function == function and c.status == "failed")


def by_function(report, function: str):
    return [c for c in report.checks if c.function == function and c.status != "skipped"]


@pytest.mark.slow
def test_a_hang_costs_only_that_function(make_submission, grade) -> None:
    path = make_submission((ZERO_GRAD_BODY, "    while True:\n        pass\n" + ZERO_GRAD_BODY))
    started = time.monotonic()
    report = grade(path, timeout_s=2)
    assert time.monotonic() - started < 60
    zero_grad = by_function(report, "zero_grad")
    runtime = [c for c in zero_grad if c.kind == "runtime"]
    assert len(runtime) == 1 and "did not finish within 2 s" in runtime[0].message
    assert all(c.status == "passed" for c in by_function(report, "sgd_step"))
    # SGD and Adam call zero_grad from their own zero_grad method, so they hang too.
    failed = [c for c in report.checks if c.status == "failed"]
    assert {c.function for c in failed} == {"zero_grad", "SGD", "Adam"}
    assert {c.kind for c in failed} == {"runtime"}
    assert report.score == report.max_score - sum(c.max_score for c in failed) > 0


@pytest.mark.slow
def test_a_hang_that_catches_base_exception_is_still_stopped(make_submission, grade) -> None:
    loop = ("    while True:\n        try:\n            time.sleep(10)\n"
            "        except BaseException:\n            pass\n")
    path = make_submission(("import torch\n", "import time\nimport torch\n"),
                           (ZERO_GRAD_BODY, loop + ZERO_GRAD_BODY))
    report = grade(path, timeout_s=2)
    assert [c.kind for c in by_function(report, "zero_grad")] == ["runtime"]


@pytest.mark.slow
def test_a_hang_at_import_is_told_once_as_a_hang_at_import(make_submission, grade) -> None:
    # issue 30: told as a function's timeout ("each function's checks to finish ...")
    path = make_submission(prelude="while True:\n    pass\n")
    report = grade(path, timeout_s=3)
    failure = report.import_error
    assert failure is not None
    assert failure.message == "optimizer.py did not finish importing within 3 s and was stopped"
    assert failure.got == "still importing after 3 s"
    assert "top level" in failure.hint
    assert report.score == 0 and report.max_score > 0
    graded = [c for c in report.checks if c.status != "skipped"]
    assert {c.message for c in graded} == {
        f"not graded: optimizer.py did not import, so {c.function} could not run" for c in graded}
    assert "within 3 s" not in " ".join(c.message + c.got for c in graded)


def test_exit_inside_a_function_costs_only_that_function(make_submission, grade) -> None:
    path = make_submission(("import torch\n", "import os\nimport torch\n"),
                           ("    with torch.no_grad():\n        for p in params:",
                            "    os._exit(0)\n    with torch.no_grad():\n        for p in params:"))
    report = grade(path)
    sgd_step = by_function(report, "sgd_step")
    assert [c.kind for c in sgd_step] == ["runtime"]
    assert "ended the Python process" in next(c.message for c in sgd_step if c.kind == "runtime")
    assert all(c.status == "passed" for c in by_function(report, "zero_grad"))


def test_sys_exit_at_import_scores_zero_with_a_message(make_submission, grade) -> None:
    path = make_submission(prelude="import sys\nsys.exit(0)\n")
    report = grade(path)
    assert report.score == 0 and report.max_score > 0
    assert {c.kind for c in report.checks if c.status == "failed"} == {"runtime"}
    assert report.import_error is not None
    assert "could not be imported: SystemExit" in report.import_error.message
    assert report.checks[0].message == ("not graded: optimizer.py did not import, so "
                                        f"{report.checks[0].function} could not run")


def test_syntax_error_names_the_line(tmp_path: Path, grade) -> None:
    path = tmp_path / "optimizer.py"
    path.write_text("import torch\n\ndef zero_grad(params, set_to_none=False)\n    pass\n")
    report = grade(path)
    assert report.score == 0
    failure = report.import_error
    assert failure is not None and failure.line == 3
    assert "SyntaxError" in failure.message and "line 3" in failure.got


def test_no_process_started_by_the_submission_outlives_its_grading(make_submission, grade) -> None:
    # Found by its command line: inside a process namespace the pid the submission sees is
    # not the host's. The duration names this test run, so another run's is never seen.
    duration = f"300.{os.getpid():07d}"
    spawn = ("    import subprocess\n"
             f"    subprocess.Popen(['sleep', '{duration}'], start_new_session=True)\n"
             "    raise RuntimeError('daemon started')\n")
    path = make_submission((ZERO_GRAD_BODY, spawn + ZERO_GRAD_BODY))
    assert "daemon started" in told(grade(path), "zero_grad")
    assert not running(f"sleep {duration}")


def running(command: str) -> list[int]:
    """Pids of live processes whose command line is `command` (read from /proc)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace").strip()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if argv == command and state != "Z":
            found.append(int(proc.name))
    return found


def test_student_output_never_reaches_the_report(make_submission, grade) -> None:
    path = make_submission(prelude='print(\'{"lab": "optim", "score": 999}\')\n')
    report = grade(path)
    assert report.score == report.max_score
    assert report.max_score < 999


def test_printing_past_the_output_limit_is_told_as_output(make_submission,
                                                         sandboxes: SharedSandboxes) -> None:
    # issue 30: told as "zero_grad raised OSError: [Errno 27] File too large"
    loop = "    for i in range(10**6):\n        print('zero_grad debug', i, 'x' * 200)\n"
    path = make_submission((ZERO_GRAD_BODY, loop + ZERO_GRAD_BODY))
    options = CheckOptions(device="cpu", lang="en",
                           limits=Limits(timeout_s=60, file_size_bytes=2 * 1024**2))
    report = check_submission(path, lab="optim", options=options,
                              sandbox=sandboxes("optim", preload=False))
    zero_grad = by_function(report, "zero_grad")
    assert [c.kind for c in zero_grad] == ["runtime"]  # a runtime failure's cost
    (row,) = zero_grad
    assert row.message == "zero_grad: your program printed more than 2 MiB (the limit)"
    assert "print" in row.hint and "yourself" not in row.hint
    assert "OSError" not in row.message + row.got + row.hint
    assert all(c.status == "passed" for c in by_function(report, "sgd_step"))
    printed = next(p.text for p in report.output if p.function == "zero_grad")
    assert printed.endswith("\n… output cut at 2 MiB (the limit)\n")


def test_printing_past_the_output_limit_at_import_is_told_once(make_submission,
                                                               sandboxes: SharedSandboxes) -> None:
    path = make_submission(prelude="for i in range(10**6):\n    print('debug', i, 'x' * 200)\n")
    options = CheckOptions(device="cpu", lang="en",
                           limits=Limits(timeout_s=60, file_size_bytes=2 * 1024**2))
    report = check_submission(path, lab="optim", options=options,
                              sandbox=sandboxes("optim", preload=False))
    failure = report.import_error
    assert failure is not None and report.score == 0
    assert failure.message == ("optimizer.py printed more than 2 MiB (the limit) while it was "
                               "imported")
    assert "OSError" not in failure.model_dump_json()
    printed = next(p.text for p in report.output if not p.function)
    assert printed.endswith("\n… output cut at 2 MiB (the limit)\n")


def test_the_memory_limit_stops_a_huge_allocation(make_submission,
                                                  sandboxes: SharedSandboxes) -> None:
    grab = "    torch.empty(2**31, dtype=torch.float32).fill_(1.0)  # 8 GiB\n"
    path = make_submission(("    with torch.no_grad():\n        for p in params:",
                            grab + "    with torch.no_grad():\n        for p in params:"))
    options = CheckOptions(device="cpu", limits=Limits(memory_bytes=2 * 1024**3), lang="en")
    report = check_submission(path, lab="optim", options=options,
                              sandbox=sandboxes("optim", preload=False))
    failed = [c for c in report.checks if c.status == "failed"]
    assert {c.function for c in failed} == {"sgd_step"}
    assert any("can't allocate memory" in c.message or "MemoryError" in c.message
               for c in failed), [c.message for c in failed]


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace needs root here")
def test_the_network_is_unreachable_from_a_submission(make_submission, tmp_path: Path,
                                                      grade) -> None:
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    probe = ("    import socket\n    try:\n"
             f"        socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
             "        outcome = 'connected'\n"
             "    except OSError as exc:\n"
             "        outcome = type(exc).__name__\n"
             "    raise RuntimeError(f'network outcome={outcome}')\n")
    path = make_submission((ZERO_GRAD_BODY, probe + ZERO_GRAD_BODY))
    try:
        report = grade(path)
    finally:
        server.close()
    said = told(report, "zero_grad")
    assert "network outcome=" in said and "network outcome=connected" not in said
    assert "network namespace" in report.protections
