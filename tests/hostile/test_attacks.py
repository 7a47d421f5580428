"""Hostile submissions: each ends in its expected outcome within its limits, in `check` and in
`grade`, with nothing left running and nothing outside the work folder changed.

Each `tests/hostile/<name>.py` is one attack (with a correct `sgd_step`, so that "the rest of
the lab is still graded" can be seen) and `<name>.toml` its expected outcome:

    runtime = [...]   functions lost to a runtime check (timeout, exit, signal, tampering)
    failed = [...]    functions with a failed check (the call raised, the grader went on)
    graded = [...]    functions whose every check passed
    said = "..."      text the failed checks of those functions show
    score = "zero"    nothing could be graded
    flagged = "..."   text a line of the report's `integrity` (the instructor's review) holds
    leftovers = "..." a command line that must not be running once grading ends
    needs = "..."     the protection the expected outcome relies on (skipped where absent)
    timeout_s = 2     `check`'s limit for an attack that hangs on purpose and never reaches
                      torch.optim (whose first call needs the longer CHECK_LIMITS)

Placeholders in the files and in `leftovers` (@ROOT@, @PORT@, @UNIX@, @CANARY@, @OTHER@,
@GRADER_PID@, @RUN@) are filled in by the test; @RUN@ makes a leftover's command line this
test run's own (`sleep 317.<pid>`), so another run on the same machine is not taken for one.
Every attack is bounded: 40 forked processes at most, allocations refused by the
memory limit; an attack that would signal probes with signal 0 first and sends nothing where
that probe was allowed.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.batch import BatchOptions, grade_class
from grader.engine import CheckOptions, check_submission
from grader.grades import load_reports
from grader.models import Limits, Report
from grader.sandbox import Sandbox
from tests.conftest import SharedSandboxes

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = sorted(p for p in Path(__file__).parent.glob("*.py") if not p.name.startswith("test_"))
LIMITS = Limits(timeout_s=3, memory_bytes=2 * 1024**3)
OPTIONS = CheckOptions(device="cpu", lang="en", limits=LIMITS)
# `check`'s sandbox has no batch preload: a child whose code reaches torch.optim imports
# torch's compiler first (about 2 s of the limit on an idle machine, over 3 s on a busy one).
CHECK_LIMITS = Limits(timeout_s=6, memory_bytes=LIMITS.memory_bytes)
CHECK_OPTIONS = CheckOptions(device="cpu", lang="en", limits=CHECK_LIMITS)
# Four functions, each at most the timeout, plus starting workers: a generous bound that a
# hang without a working limit would still exceed.
WITHIN_S = 4 * LIMITS.timeout_s + 30


def expected(path: Path) -> dict:
    with path.with_suffix(".toml").open("rb") as handle:
        return tomllib.load(handle)


def running(command: str) -> list[int]:
    """Pids of live processes whose command line holds `command` (read from /proc): the
    leftover itself and any shell still running it. The commands name this test run (@RUN@),
    so no other run's processes are counted."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace").strip()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if command in argv and state != "Z":
            found.append(int(proc.name))
    return found


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The things attacks aim at: a canary file outside any work folder, another student's
    file, a listening port on the host's loopback, a path-named Unix socket (a local
    service), and the grading process's pid."""
    folder = tmp_path_factory.mktemp("world")
    folder.chmod(0o755)
    canary = folder / "canary.txt"
    canary.write_text("untouched")
    other = folder / "class" / "other_student.py"
    other.parent.mkdir()
    other.write_text("SECRET = 'answers'\n")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    local = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    local.bind(str(folder / "service.sock"))
    local.listen(8)
    yield {"@ROOT@": str(ROOT), "@CANARY@": str(canary), "@OTHER@": str(other),
           "@PORT@": str(server.getsockname()[1]), "@UNIX@": str(folder / "service.sock"),
           "@GRADER_PID@": str(os.getpid()), "@RUN@": f"{os.getpid():07d}"}
    server.close()
    local.close()


def filled(path: Path, world: dict[str, str]) -> str:
    return fill(path.read_text(), world)


def fill(text: str, world: dict[str, str]) -> str:
    for placeholder, value in world.items():
        text = text.replace(placeholder, value)
    return text


def leftover(want: dict, world: dict[str, str]) -> str:
    """The command line an attack's leftover runs, in this test run's words."""
    return fill(want["leftovers"], world)


def test_a_leftover_is_seen_while_it_runs(world: dict[str, str]) -> None:
    """The leftover probe can fail: a process of ours with that command line is found, and
    not once it has ended."""
    import subprocess

    command = fill("sleep 317.@RUN@", world)
    sleeper = subprocess.Popen(command.split())
    try:
        deadline = time.monotonic() + 10
        while not running(command) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert running(command) == [sleeper.pid]
        assert not running(command + "0")
    finally:
        sleeper.kill()
        sleeper.wait()
    assert not running(command)


def assert_outcome(report: Report, want: dict, *, full_marks: float) -> None:
    checks = [c for c in report.checks if c.status != "skipped"]

    def of(function: str) -> list:
        return [c for c in checks if c.function == function]

    text = " ".join(f"{c.message} {c.got} {c.expected}" for c in checks if c.status == "failed")
    if report.import_error is not None:  # why the file did not import: said once, there
        failed = report.import_error
        text += f" {failed.message} {failed.got} {failed.expected}"
    assert report.max_score == full_marks, "every student has the same maximum"
    for function in want.get("runtime", []):
        assert any(c.kind == "runtime" and c.status == "failed" for c in of(function)), function
        assert not any(c.status == "passed" for c in of(function)), function
    for function in want.get("failed", []):
        assert any(c.status == "failed" for c in of(function)), function
    for function in want.get("graded", []):
        assert of(function) and all(c.status == "passed" for c in of(function)), (
            function, [c.message for c in of(function) if c.status == "failed"])
    if want.get("score") == "zero":
        assert report.score == 0
    needs = want.get("needs")
    if "said" in want and (needs is None or needs in report.protections):
        assert want["said"] in text, text[:2000]
    if "flagged" in want:
        assert any(want["flagged"] in line for line in report.integrity), report.integrity


@pytest.fixture(scope="module")
def full_marks(sandboxes: SharedSandboxes) -> float:
    return check_submission(ROOT / "solutions" / "optim" / "optimizer.py", lab="optim",
                            options=OPTIONS, sandbox=sandboxes("optim")).max_score


# Every attack graded through a sandbox (about 45 s on 2 cores, a time limit waited out for
# each that hangs): the whole-product suite of tests/hostile/ runs with the slow tests; the
# sandbox's own tests (tests/sandbox/) stay in the loop.
@pytest.mark.slow
@pytest.mark.parametrize("path", HOSTILE, ids=[p.stem for p in HOSTILE])
def test_check_ends_each_attack_as_expected(path: Path, world: dict[str, str],
                                            full_marks: float, tmp_path: Path,
                                            sandboxes: SharedSandboxes) -> None:
    """`check`'s route: a sandbox without the batch preload (shared by the attacks: its
    zygote forks each a fresh child, as a fresh sandbox's would; one an attack ended fails
    the next test that uses it). `grade`'s route, with the preload, is the test below."""
    want = expected(path)
    submission = tmp_path / "optimizer.py"
    submission.write_text(filled(path, world))
    started = time.monotonic()
    timeout_s = want.get("timeout_s", CHECK_LIMITS.timeout_s)
    limits = CHECK_LIMITS.model_copy(update={"timeout_s": timeout_s})
    report = check_submission(submission, lab="optim",
                              options=dataclasses.replace(CHECK_OPTIONS, limits=limits),
                              sandbox=sandboxes("optim", preload=False))
    assert time.monotonic() - started < 4 * timeout_s + 30  # as WITHIN_S, for its limit
    assert_outcome(report, want, full_marks=full_marks)
    if "leftovers" in want:
        assert not running(leftover(want, world)), "a process outlived grading"
    assert Path(world["@CANARY@"]).read_text() == "untouched"
    needs = want.get("needs")
    if needs is not None and needs not in report.protections:
        pytest.skip(f"{needs} is not available here: the attack's outcome was not asserted")


# `grade`'s workers borrow the run's pooled sandboxes (conftest.shared_batch_workers), as a
# worker's sandbox in a real run grades one student after another: whatever an attack left in
# one reaches the students graded after it, here too (a zygote that ended is not lent again).
@pytest.mark.slow
@pytest.mark.usefixtures("shared_batch_workers")
def test_grade_ends_every_attack_as_expected(world: dict[str, str], full_marks: float,
                                             tmp_path: Path) -> None:
    """The whole suite as one class, two workers: the same outcomes, per student."""
    subs = tmp_path / "class"
    subs.mkdir()
    for path in HOSTILE:
        (subs / path.name).write_text(filled(path, world))
    out = tmp_path / "out"
    started = time.monotonic()
    result = grade_class(subs, options=BatchOptions(lab="optim", out=out, workers=2,
                                                    check=OPTIONS))
    assert time.monotonic() - started < WITHIN_S * len(HOSTILE) / 2
    assert result.students == len(HOSTILE) and not result.errors
    reports = {r.student: r for r in load_reports(out)}
    assert set(reports) == {p.stem for p in HOSTILE}
    for path in HOSTILE:
        assert_outcome(reports[path.stem], expected(path), full_marks=full_marks)
    for path in HOSTILE:
        if "leftovers" in expected(path):
            assert not running(leftover(expected(path), world))
    assert Path(world["@CANARY@"]).read_text() == "untouched"
    with (out / "gradebook.csv").open() as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert float(rows["fake_report"]["score"]) < 999
    assert not list(subs.glob("*.bin")), "a write landed in the class folder"


# Attacks on the channels and processes that students share with each other in a batch.
NEIGHBOURS = ["write_protocol_pipe", "malformed_progress", "forge_progress", "process_chain",
              "close_progress_pipe", "signal_classmates"]


@pytest.mark.slow
@pytest.mark.usefixtures("shared_batch_workers")
@pytest.mark.parametrize("workers", [1, 2])
def test_no_attack_lowers_a_classmates_score(world: dict[str, str], full_marks: float,
                                             tmp_path: Path, workers: int) -> None:
    """Each attacker is followed by correct classmates on the same worker(s): every one of
    them gets full marks, and nothing the attackers started is left running."""
    subs = tmp_path / "class"
    subs.mkdir()
    solution = (ROOT / "solutions" / "optim" / "optimizer.py").read_text()
    for index, name in enumerate(NEIGHBOURS):
        (subs / f"{index:02d}a_{name}.py").write_text(
            filled(Path(__file__).parent / f"{name}.py", world))
        for after in range(2):
            (subs / f"{index:02d}b_classmate{after}.py").write_text(solution)
    out = tmp_path / "out"
    result = grade_class(subs, options=BatchOptions(lab="optim", out=out, workers=workers,
                                                    check=OPTIONS))
    assert not result.errors
    reports = {r.student: r for r in load_reports(out)}
    classmates = [r for student, r in reports.items() if "b_classmate" in student]
    assert len(classmates) == 2 * len(NEIGHBOURS)
    for report in classmates:
        assert report.score == report.max_score == full_marks, (
            report.student, [c.message for c in report.checks if c.status == "failed"])
    assert not running(fill("sleep 317.@RUN@", world))


# Attacks on what outlives a child or lies beyond it, and the classmates graded after them.
BEYOND_THE_CHILD = ["process_chain", "detached_daemon", "signal_classmates", "kill_grader",
                    "read_grader_environ", "keep_capabilities"]


@pytest.mark.slow
def test_without_root_the_namespaces_contain_the_same_attacks(world: dict[str, str],
                                                              full_marks: float,
                                                              tmp_path: Path) -> None:
    """The route a student's laptop takes (no root: the process namespaces come from a user
    namespace of the zygote's own, and no uid drop): each attack ends as expected, a
    classmate graded after each on the same worker gets full marks, and nothing is left."""
    solution = ROOT / "solutions" / "optim" / "optimizer.py"
    with Sandbox(["optim"], run_as=None, user_namespace=True) as sandbox:
        for name in BEYOND_THE_CHILD:
            path = Path(__file__).parent / f"{name}.py"
            submission = tmp_path / f"{name}.py"
            submission.write_text(filled(path, world))
            report = check_submission(submission, lab="optim", options=OPTIONS,
                                      sandbox=sandbox)
            if "user namespace" not in report.protections:
                pytest.skip("this kernel lets no unprivileged process make a user namespace")
            assert "process namespace" in report.protections
            want = expected(path)
            assert_outcome(report, want, full_marks=full_marks)
            if "leftovers" in want:
                assert not running(leftover(want, world)), f"{name}: a process outlived grading"
            classmate = check_submission(solution, lab="optim", options=OPTIONS,
                                         sandbox=sandbox)
            assert classmate.score == full_marks, name
    assert not running(fill("sleep 317.@RUN@", world))
    assert Path(world["@CANARY@"]).read_text() == "untouched"
