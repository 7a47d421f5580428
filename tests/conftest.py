"""Fixtures and the run's settings shared by every test.

Layout (tests/README.md): a test of grader/X/Y.py lives in tests/X/test_Y.py, a test of
grader/Z.py in tests/test_Z.py; suites that run over the known submission files (tests/
submissions/, tests/hostile/) live in tests/known/; a test of bench/X.py in tests/bench/.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import torch

from grader.models import CheckResult, Report

if TYPE_CHECKING:
    from grader.sandbox.runner import Sandbox

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "solutions" / "optim" / "optimizer.py"
STUB = ROOT / "assignments" / "optim" / "optimizer.py"


# Set by a shell or a CI system, these change what the grader prints, not whether it is right:
# a Korean locale picks Korean feedback, FORCE_COLOR and its kin make rich colour text that is
# piped, COLUMNS makes click wrap its help. The suite reads English, uncoloured, unwrapped text.
_PRESENTATION = ("FORCE_COLOR", "CLICOLOR_FORCE", "PY_COLORS", "TTY_COMPATIBLE",
                 "TTY_INTERACTIVE", "COLUMNS", "LINES")


def pytest_configure(config: pytest.Config) -> None:
    os.environ["LC_ALL"] = "C.UTF-8"
    for variable in _PRESENTATION:
        os.environ.pop(variable, None)
    _own_uids_per_xdist_worker()


def _own_uids_per_xdist_worker() -> None:
    """Under pytest-xdist, each worker process drops its children to uids of its own.

    A sandbox a test starts itself (`check_submission` without one: `check`'s route) takes uid
    slot 0, as two `check` runs side by side on one machine would; where children drop their
    uid, two workers' jobs could then share a uid and one's uid sweep end the other's child.
    A base uid per worker (INPLACE_GRADER_UID, limits.configured_uid) keeps their ranges apart;
    the shared sandboxes below hold a slot of their own as well, as `grade`'s workers do."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or "INPLACE_GRADER_UID" in os.environ:
        return
    from grader.sandbox.limits import DEFAULT_UID, UID_SLOTS, UIDS_PER_WORKER

    index = int(worker[2:])
    if index:
        os.environ["INPLACE_GRADER_UID"] = str(DEFAULT_UID + index * UID_SLOTS * UIDS_PER_WORKER)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that starts a Python of its own (`cli_subprocess`: a torch import or more) runs
    with the slow ones, out of the `-m "not slow"` loop; CUDA tests skip without a device."""
    skip = None if torch.cuda.is_available() else pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cli_subprocess" in item.keywords and "slow" not in item.keywords:
            item.add_marker(pytest.mark.slow)
        if skip is not None and "cuda" in item.keywords:
            item.add_marker(skip)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What exists once the tests are collected (torch, the grader, every test item) lives as
    long as the run: frozen out of the collector's reach. What the tests keep (each known
    submission's report and records) makes a full collection slow, so those come ten times
    less often than by Python's default."""
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 100)


@pytest.fixture
def solution_source() -> str:
    from grader.stubs import strip_markers

    return strip_markers(SOLUTION.read_text())


@pytest.fixture
def make_submission(tmp_path: Path, solution_source: str):
    """Write `optimizer.py` = the solution with `replacements` applied (old -> new)."""

    def make(*replacements: tuple[str, str], prelude: str = "") -> Path:
        source = solution_source
        for old, new in replacements:
            assert old in source, old
            source = source.replace(old, new)
        path = tmp_path / "optimizer.py"
        future = "from __future__ import annotations\n"
        path.write_text(source.replace(future, future + prelude, 1))
        return path

    return make


@dataclass(frozen=True)
class Ran:
    """What a command returned, named as subprocess.CompletedProcess names it."""

    returncode: int
    stdout: str
    stderr: str


def grader_cli(*args: str, env: dict[str, str] | None = None) -> Ran:
    """`inplace-grader ARGS` in this process (click's CliRunner, `env` set for the call): the
    same parse, library call, output and exit code as a new process, less a Python start that
    imports torch again; help is wrapped at 78 columns, as click wraps it into a pipe. The few
    tests that need a process of their own (what reaches its file descriptors, what it
    imports) run one and are marked `cli_subprocess`."""
    from click.testing import CliRunner

    from grader.cli import main

    result = CliRunner().invoke(main, list(args), env=env, prog_name="inplace-grader",
                                catch_exceptions=False, terminal_width=78)
    return Ran(result.exit_code, result.stdout, result.stderr)


def full_marks(lab: str) -> float:
    """A lab's full marks on the CPU: its rubric's points, every check counted once."""
    from grader.labs import lab_rubric

    return sum(lab_rubric(lab).points.values())


class SharedSandboxes:
    """One sandbox per lab for the whole test run (per xdist worker), started on first use and
    holding a uid slot of its own, as one of `grade`'s workers does (batch/local.py). Its zygote
    forks a fresh child for every submission, so a test that grades through it sees what a
    fresh sandbox would show, less the start-up (a second or more of torch import each).

    `sandboxes(lab)` has the batch preload (runner.BATCH_PRELOAD), like `grade`'s workers;
    `sandboxes(lab, preload=False)` loads what `check`'s own sandbox loads. A test about a
    sandbox's start or its options (run_as, user_namespace) starts its own instead."""

    def __init__(self) -> None:
        self._running: dict[tuple[str, bool], Sandbox] = {}
        self._idle: dict[tuple[str, bool], list[Sandbox]] = {}  # lent to batch workers
        self._all: list[Sandbox] = []
        self._held: list[int] = []
        self._lock = threading.Lock()  # batch workers borrow from their own threads

    def __call__(self, lab: str, *, preload: bool = True) -> Sandbox:
        key = (lab, preload)
        running = self._running.get(key)
        if running is not None and running._proc.poll() is not None:
            code = running._proc.returncode
            del self._running[key]  # the next test gets a new one
            pytest.fail(f"the shared {lab} sandbox's worker ended (exit {code}) after an "
                        "earlier test: a submission graded there reached the zygote")
        if running is None:
            running = self._running[key] = self._start(lab, preload=preload)
        return running

    def lend(self, lab: str, *, preload: bool) -> SandboxLease:
        """A sandbox of the pool that no one else holds until the lease is closed (one per
        batch worker thread: a sandbox runs one job at a time)."""
        key = (lab, preload)
        with self._lock:
            idle = self._idle.setdefault(key, [])
            while idle and idle[-1]._proc.poll() is not None:  # ended while it was idle
                idle.pop()
            sandbox = idle.pop() if idle else self._start(lab, preload=preload)
        return SandboxLease(self, key, sandbox)

    def give_back(self, key: tuple[str, bool], sandbox: Sandbox) -> None:
        if sandbox._proc.poll() is None:  # one a job ended is not lent again
            with self._lock:
                self._idle[key].append(sandbox)

    def _start(self, lab: str, *, preload: bool) -> Sandbox:
        # From its module: grader.sandbox.Sandbox may be a stand-in whose lend() would take
        # the lock this is called under again (a deadlock).
        from grader.sandbox.limits import held_slot
        from grader.sandbox.runner import BATCH_PRELOAD, Sandbox

        slot, held = held_slot()
        if held is not None:
            self._held.append(held)
        started = Sandbox([lab], uid_slot=slot, preload=BATCH_PRELOAD if preload else (),
                          hold=held)
        self._all.append(started)
        return started

    def close(self) -> None:
        try:
            for started in self._all:
                started.close()
        finally:
            for held in self._held:
                os.close(held)


class SandboxLease:
    """A pooled sandbox as a batch worker holds it: the sandbox's own methods, except that
    `close` gives it back to the pool (with the zygote's peak memory so far, as `close`
    leaves it in `peak_mib`)."""

    def __init__(self, pool: SharedSandboxes, key: tuple[str, bool], sandbox: Sandbox) -> None:
        self._pool, self._key, self._sandbox = pool, key, sandbox
        self.peak_mib = 0.0
        self._closed = self._failed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sandbox, name)

    def __enter__(self) -> SandboxLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run_job(self, **job: Any) -> Any:
        """The sandbox's run_job; one whose job failed (SandboxError: the zygote out of step or
        gone) is closed, as the grader closes it, and never lent again."""
        try:
            return self._sandbox.run_job(**job)
        except BaseException:
            self._failed = True
            raise

    def close(self) -> None:
        if self._closed:  # a worker's replace() and its close() may both close it
            return
        self._closed = True
        self.peak_mib = self._sandbox.peak_rss_mib()
        if self._failed:
            self._sandbox.close()
        else:
            self._pool.give_back(self._key, self._sandbox)


def lending(sandboxes: SharedSandboxes) -> type:
    """A stand-in for the Sandbox class where the grader starts one: `Sandbox([lab], ...)`
    lends a pooled sandbox (with the batch preload where it was asked for) instead."""
    import inspect

    from grader.sandbox.runner import Sandbox

    signature = inspect.signature(Sandbox)

    class Lent:
        protections = Sandbox.protections

        def __new__(cls, *args: Any, **kwargs: Any) -> SandboxLease:  # type: ignore[misc]
            asked = signature.bind(*args, **kwargs).arguments  # raises as Sandbox(...) would
            (lab,) = asked["labs"]
            return sandboxes.lend(lab, preload=bool(asked.get("preload")))

    return Lent


# Where the grader starts its sandboxes: a test that grades through the grader's own route
# and is not about starting or ending a sandbox borrows them from the run's pool instead (two
# torch imports saved per class graded, one per `check`). Each still gets a sandbox no one
# else uses while it runs, whose zygote forks every submission a fresh child. Tests of a
# sandbox's start or of attacks on one zygote (tests/sandbox/, the hostile namespaces test)
# start their own. The names patched are where batch/local.py, engine/api.py,
# batch/cluster.py and nbgrader's verify.py (grader.sandbox's own name) start them.


@pytest.fixture
def shared_batch_workers(monkeypatch: pytest.MonkeyPatch, sandboxes: SharedSandboxes) -> None:
    """`grade_class`'s local workers (batch/local.py's `Workers`) borrow their sandboxes, with
    the batch preload, for as long as their run lasts."""
    import grader.batch.local

    monkeypatch.setattr(grader.batch.local, "Sandbox", lending(sandboxes))


@pytest.fixture
def shared_check_sandboxes(monkeypatch: pytest.MonkeyPatch, sandboxes: SharedSandboxes) -> None:
    """`check` and the platforms' runners (engine/api.py, grading without a sandbox) borrow
    `check`'s sandbox (no preload) for the one submission they grade."""
    import grader.engine.api

    monkeypatch.setattr(grader.engine.api, "Sandbox", lending(sandboxes))


@pytest.fixture
def shared_cluster_sandboxes(monkeypatch: pytest.MonkeyPatch, sandboxes: SharedSandboxes
                             ) -> None:
    """The workers of a `local` cluster (threads of this process, batch/cluster.py's
    `WorkerSandboxes`) borrow their sandboxes, with the batch preload, as local workers do."""
    import grader.batch.cluster

    monkeypatch.setattr(grader.batch.cluster, "Sandbox", lending(sandboxes))


@pytest.fixture
def shared_verify_sandboxes(monkeypatch: pytest.MonkeyPatch, sandboxes: SharedSandboxes
                            ) -> Iterator[None]:
    """`nbgrader verify`'s regrade (verify.py's `_Workers` imports the class from
    grader.sandbox when it starts one) borrows a pooled sandbox without the batch preload.
    After the test, no grader module holds the stand-in: one first imported during the test
    with `from grader.sandbox import Sandbox` would keep it past the patch."""
    import sys

    import grader.sandbox

    lent = lending(sandboxes)
    monkeypatch.setattr(grader.sandbox, "Sandbox", lent)
    yield
    monkeypatch.undo()
    kept = [name for name, module in list(sys.modules.items())
            if name.startswith("grader") and getattr(module, "Sandbox", None) is lent]
    assert not kept, f"{kept} kept the lending stand-in"


@pytest.fixture(scope="session")
def _built_wheels() -> dict[Path | None, Path]:
    return {}


@pytest.fixture
def wheel_built_once(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory,
                     _built_wheels: dict[Path | None, Path]) -> None:
    """The builders' `grader_wheel` builds this checkout's wheel once for the run and copies
    it where each builder asks: it is the same wheel for every lab (tests/test_distribution.py
    tests the build itself)."""
    import shutil

    import grader.distribution
    import grader.platforms.classroom50.autograder as classroom50
    import grader.platforms.gradescope.autograder as gradescope

    build = grader.distribution.grader_wheel
    built = _built_wheels

    def once(out_dir: Path, root: Path | None) -> Path:
        if root not in built:
            built[root] = build(tmp_path_factory.mktemp("wheel"), root)
        out_dir.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy(built[root], out_dir / built[root].name))

    for module in (grader.distribution, classroom50, gradescope):
        monkeypatch.setattr(module, "grader_wheel", once)


@pytest.fixture(scope="session")
def sandboxes() -> Iterator[SharedSandboxes]:
    """`sandboxes("optim")`: the run's shared sandbox of a lab (see SharedSandboxes)."""
    shared = SharedSandboxes()
    try:
        yield shared
    finally:
        shared.close()


# Reports built by hand, for what words and shows a report's rows without grading anything.


def report_of(*checks: CheckResult) -> Report:
    """A report of the optim lab holding `checks`."""
    return Report(lab="optim", score=0.0, max_score=1.0, checks=list(checks),
                  grader_version="0", torch_version="0", elapsed_s=0.0)


def failed_row(check_id: str = "sgd_step.same_storage", *, status: str = "failed",
         reproducer: str = "", hidden: bool = False, device: str = "cpu") -> CheckResult:
    """A row of `check_id`, failed unless `status` says otherwise."""
    return CheckResult(id=check_id, name=check_id, function=check_id.partition(".")[0],
                       kind="storage", device=device, status=status,  # type: ignore[arg-type]
                       passed=status == "passed", score=0.0, max_score=1.0,
                       message="`params[0]` now points to different memory",
                       reproducer=reproducer, hidden=hidden)
