"""Grading on a Dask cluster (`grade --cluster`): the same gradebook as a local `grade`, from
real schedulers and workers on 127.0.0.1, one of them killed by its pid mid-run."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from grader.batch import BatchOptions, BatchResult, grade_class
from grader.engine import CheckOptions
from grader.errors import UsageError
from grader.grades import load_reports
from grader.models import Limits
from tests.conftest import grader_cli

distributed = pytest.importorskip("distributed", reason="the cluster extra is not installed")
from grader.batch.cluster import ClusterExecutor  # noqa: E402  (Dask is there)
from tests.conftest import ROOT  # noqa: E402

# The local grades compared with the cluster's borrow their workers' sandboxes
# (conftest.shared_batch_workers); the cluster's workers start their own.
# Each test starts a real scheduler and workers (seconds each): slow.
pytestmark = [pytest.mark.usefixtures("shared_batch_workers"), pytest.mark.slow]

KNOWN = ROOT / "tests" / "submissions" / "optim"
# Known mistakes and correct idioms, a folder submission with a helper module of its own,
# and a file that does not import: every kind of row a gradebook has.
NAMES = ("reference_copy", "SGD_args_reordered", "Adam_no_bias_correction", "Adam_missing",
         "sgd_step_add_out", "sgd_step_data_add_temp")


def a_class(folder: Path, copies: int = 1) -> Path:
    folder.mkdir(parents=True)
    for round_ in range(copies):
        for name in NAMES:
            (folder / f"{name}-{round_}.py").write_text((KNOWN / f"{name}.py").read_text())
    (folder / "broken.py").write_text("def zero_grad(params:\n")
    own = folder / "alice"
    own.mkdir()
    source = (KNOWN / "reference_copy.py").read_text()
    (own / "helpers.py").write_text(source)
    future = "from __future__ import annotations\n"
    (own / "optimizer.py").write_text(source.replace(
        future, future + "from helpers import zero_grad  # noqa\n", 1))
    return folder


def options(out: Path, workers: int = 2, device: str = "cpu") -> BatchOptions:
    check = CheckOptions(device=device, lang="en", limits=Limits(timeout_s=20))
    return BatchOptions(lab="optim", out=out, workers=workers, check=check)


def on_cluster(subs: Path, out: Path, address: str, device: str = "cpu",
               **kwargs: Any) -> BatchResult:
    """`grade` with --cluster ADDRESS, as the CLI runs it: the cluster executor."""
    return grade_class(subs, options=options(out, device=device),
                       executor=ClusterExecutor(address), **kwargs)


def gradebook(out: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text())))


def verdicts(out: Path) -> dict[str, list[tuple[str, str, str, float, str]]]:
    """Each student's rows as (check, device, status, score, message): what was decided and
    what the student reads."""
    return {report.student: [(c.id, c.device, c.status, c.score, c.message)
                             for c in report.checks] for report in load_reports(out)}


@pytest.mark.usefixtures("shared_cluster_sandboxes")
def test_a_local_cluster_grades_the_class_as_a_local_grade_does(tmp_path: Path) -> None:
    subs = a_class(tmp_path / "subs")
    # Names a folding would merge, a malformed notebook, a link to a classmate: one row each.
    (subs / "Mary Ann.py").write_text((KNOWN / "reference_copy.py").read_text())
    (subs / "Mary_Ann.py").write_text((KNOWN / "sgd_step_data_add_temp.py").read_text())
    (subs / "nb.ipynb").write_text('{"nbformat": 4, "cells": [{"cell_type": "code", '
                                   '"source": 42}]}')
    (subs / "mallory.py").symlink_to("Mary Ann.py")
    grade_class(subs, options=options(tmp_path / "here"))
    result = on_cluster(subs, tmp_path / "there", "local:2")
    assert result.cluster_workers == 2
    assert gradebook(tmp_path / "there") == gradebook(tmp_path / "here")
    assert verdicts(tmp_path / "there") == verdicts(tmp_path / "here")
    alice = next(r for r in load_reports(tmp_path / "there") if r.student == "alice")
    assert alice.score == alice.max_score  # its helper module travelled with it
    assert {r.student for r in load_reports(tmp_path / "there")} >= {"alice", "broken"}
    students = [row["student"] for row in gradebook(tmp_path / "there")]
    assert sorted(students) == sorted(p.stem for p in subs.iterdir())
    rows = {row["student"]: row for row in gradebook(tmp_path / "there")}
    assert rows["Mary Ann"]["percent"] == "100.0" != rows["Mary_Ann"]["percent"]
    assert rows["nb"]["status"] == rows["mallory"]["status"] == "not gradable"


def listening() -> set[tuple[str, int]]:
    import psutil  # Dask's own dependency

    process = psutil.Process()
    connections = getattr(process, "net_connections", None) or process.connections  # psutil<6
    return {(c.laddr.ip, c.laddr.port) for c in connections("inet")
            if c.status == psutil.CONN_LISTEN}


def test_a_local_cluster_listens_on_loopback_only_and_serves_no_page() -> None:
    """Dask opens an HTTP server per scheduler and worker whatever the options (0.0.0.0:8787
    by default): a classmate on the network must reach nothing, and a local user no page."""
    import urllib.error
    import urllib.request

    import dask

    from grader.batch.cluster import connect

    before = listening()
    with connect("local:2", workers=2) as client:
        assert client.submit(sum, [40, 2]).result() == 42
        # With bokeh installed, a worker with its dashboard on would serve pages here.
        assert not any(worker._dashboard for worker in client.cluster.workers.values())
        opened = listening() - before
        assert opened, "Dask opened no HTTP server: this test no longer sees what it guards"
        assert {ip for ip, _ in opened} == {"127.0.0.1"}, opened
        for _, port in opened:
            for page in ("/", "/status", "/info/main/workers.html", "/metrics", "/health"):
                with pytest.raises(urllib.error.HTTPError) as refused:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}{page}", timeout=10)
                assert refused.value.code == 404, (port, page)
    assert dask.config.get("distributed.scheduler.http.routes"), "the routes came back after"


def _start(command: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log.open("wb"),
                            start_new_session=True)


@dataclass
class HandStarted:
    address: str
    scheduler: subprocess.Popen
    workers: list[subprocess.Popen]


def _address_in(scheduler_file: Path, scheduler: subprocess.Popen, deadline: float) -> str:
    """The scheduler's address, once its file exists and parses (it may be caught half
    written on a busy machine); the error at once if the scheduler has ended."""
    while True:
        try:
            return str(json.loads(scheduler_file.read_text())["address"])
        except (OSError, ValueError, KeyError):
            if time.monotonic() > deadline or scheduler.poll() is not None:
                raise
            time.sleep(0.1)


@contextlib.contextmanager
def scheduler_and_workers(folder: Path, workers: list[list[str]]) -> Iterator[HandStarted]:
    """A scheduler on 127.0.0.1 and one worker per argument list, as an instructor starts
    them by hand (`dask scheduler`, `dask worker`); all ended after."""
    folder.mkdir(parents=True, exist_ok=True)
    scheduler_file = folder / "scheduler.json"
    processes = [_start([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host",
                         "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                         str(scheduler_file)], folder / "scheduler.log")]
    try:
        deadline = time.monotonic() + 120
        address = _address_in(scheduler_file, processes[0], deadline)
        started = [_start([sys.executable, "-m", "distributed.cli.dask_worker", address,
                           "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host",
                           "127.0.0.1", *arguments], folder / f"worker{index}.log")
                   for index, arguments in enumerate(workers)]
        processes += started
        with distributed.Client(address, timeout="10s") as client:
            client.wait_for_workers(len(workers), timeout=max(1.0, deadline - time.monotonic()))
        yield HandStarted(address, processes[0], started)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()  # started here
            process.wait(timeout=30)


def kill_after(reports: int, process: subprocess.Popen, seen: list[str]
               ) -> Callable[[str, object, bool], None]:
    """A progress callback that records each student and kills `process` (one this test
    started, by its pid) once `reports` reports are in."""
    def progress(student: str, report: object, reused: bool) -> None:
        seen.append(student)
        if len(seen) == reports:
            process.kill()

    return progress


def test_a_class_survives_a_worker_killed_mid_run(tmp_path: Path) -> None:
    """A scheduler and two workers started by hand; one is killed (by its pid) once the
    first reports are in: its submissions are graded on the other, each report once, and
    the gradebook is a local grade's."""
    subs = a_class(tmp_path / "subs", copies=2)
    grade_class(subs, options=options(tmp_path / "here"))
    with scheduler_and_workers(tmp_path, [[], []]) as hand:
        seen: list[str] = []
        result = on_cluster(subs, tmp_path / "there", hand.address,
                            on_progress=kill_after(3, hand.workers[0], seen))
        assert hand.workers[0].wait(timeout=10) == -signal.SIGKILL
    assert len(seen) == len(set(seen)) == result.students  # each report once
    assert not result.errors
    assert gradebook(tmp_path / "there") == gradebook(tmp_path / "here")
    assert verdicts(tmp_path / "there") == verdicts(tmp_path / "here")


def test_cuda_checks_go_only_to_a_worker_that_declares_a_gpu(tmp_path: Path) -> None:
    """With `--device auto`, a class is graded where a GPU is declared, and each report
    names that worker; without one, `--device cuda` is refused before anything runs."""
    subs = a_class(tmp_path / "subs")
    with scheduler_and_workers(tmp_path, [["--resources", "GPU=1"], []]) as hand:
        address = hand.address
        with distributed.Client(address, timeout="10s") as client:
            gpu = [a for a, info in client.scheduler_info()["workers"].items()
                   if info["resources"].get("GPU")]
        on_cluster(subs, tmp_path / "auto", address, device="auto")
    assert {report.graded_on for report in load_reports(tmp_path / "auto")
            if not report.error} == set(gpu)
    with scheduler_and_workers(tmp_path / "cpu-only", [[]]) as hand, \
            pytest.raises(UsageError, match="declares a GPU"):
        on_cluster(subs, tmp_path / "cuda", hand.address, device="cuda")


@pytest.mark.cli_subprocess
def test_without_cluster_nothing_of_dask_is_imported(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.py").write_text((KNOWN / "reference_copy.py").read_text())
    script = ("import sys\nfrom grader.cli import main\n"
              f"sys.argv = ['inplace-grader', 'grade', {str(subs)!r}, '--lab', 'optim', "
              f"'--out', {str(tmp_path / 'out')!r}, '--workers', '1', '--device', 'cpu']\n"
              "try:\n    main()\nexcept SystemExit:\n    pass\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] in "
              "('dask', 'distributed')), file=sys.stderr)\n")
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert (tmp_path / "out" / "gradebook.csv").exists(), ran.stderr[-2000:]
    assert ran.stderr.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("address", ["localhost:8786", "local:0", "local:x", "tcp://", "ssh://a:1"])
def test_a_malformed_address_is_one_line(tmp_path: Path, address: str) -> None:
    (tmp_path / "subs").mkdir()
    ran = grader_cli("grade", str(tmp_path / "subs"), "--lab", "optim", "--out",
                     str(tmp_path / "out"), "--cluster", address)
    assert ran.returncode == 2
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and "--cluster" in lines[0] and "Traceback" not in ran.stderr


def test_no_scheduler_at_the_address_is_one_line(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import grader.batch.cluster

    monkeypatch.setattr(grader.batch.cluster, "CONNECT_S", 1.0)  # the words, not the wait
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.py").write_text((KNOWN / "reference_copy.py").read_text())
    ran = grader_cli("grade", str(subs), "--lab", "optim", "--out", str(tmp_path / "out"),
                     "--cluster", "tcp://127.0.0.1:9")
    assert ran.returncode == 2, ran.stderr[-2000:]
    assert "no Dask scheduler with a worker answered" in ran.stderr.strip().splitlines()[-1]


class EndsWorkerOn(distributed.WorkerPlugin):
    """Test-only: the worker process ends (as the out-of-memory killer would end it) each
    time it starts grading the submission whose hash begins with `digest` (its task key
    names it: batch/cluster.py _graded)."""

    def __init__(self, digest: str) -> None:
        self.digest = digest

    def transition(self, key: object, start: str, finish: str, **kwargs: object) -> None:
        if finish == "executing" and str(key).endswith(f"-{self.digest}"):
            os._exit(1)


def test_a_submission_that_keeps_ending_its_worker_is_an_error_row(tmp_path: Path) -> None:
    import dask

    from grader.batch import submission_hash

    subs = tmp_path / "subs"
    subs.mkdir()
    source = (KNOWN / "reference_copy.py").read_text()
    (subs / "reference_copy.py").write_text(source)
    (subs / "doomed.py").write_text(source + "\n# the same code under another hash\n")
    (subs / "SGD_args_reordered.py").write_text((KNOWN / "SGD_args_reordered.py").read_text())
    batch = options(tmp_path / "out")
    digest = submission_hash((subs / "doomed.py").read_text(), lab="optim",
                             options=batch.check)[:12]
    # One task on a worker at a time: only the submission running when it ends is suspected.
    with dask.config.set({"distributed.scheduler.allowed-failures": 1,
                          "distributed.scheduler.worker-saturation": 1.0}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        client.register_plugin(EndsWorkerOn(digest), name="ends-worker")
        result = on_cluster(subs, tmp_path / "out", cluster.scheduler_address)
    errors = dict(result.errors)
    assert set(errors) == {"doomed"}
    assert "the grading worker ended while grading it" in errors["doomed"]
    book = {row["student"]: row for row in gradebook(tmp_path / "out")}
    assert book["reference_copy"]["percent"] == "100.0"
    assert book["doomed"]["status"] == "not gradable"


def test_a_run_whose_gpu_workers_all_left_stops_with_what_it_graded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dask would wait forever for a worker with the resource; the run stops in one line
    instead, keeping every report, and the same command resumes."""
    from grader.batch import cluster

    monkeypatch.setattr(cluster, "STALL_S", 2.0)
    monkeypatch.setattr(cluster, "POLL_S", 0.5)
    subs = a_class(tmp_path / "subs", copies=3)
    with scheduler_and_workers(tmp_path, [["--resources", "GPU=1"], []]) as hand:
        graded: list[str] = []
        with pytest.raises(UsageError, match="a GPU worker is needed"):
            on_cluster(subs, tmp_path / "out", hand.address, device="auto",
                       on_progress=kill_after(1, hand.workers[0], graded))
    kept = {report.student for report in load_reports(tmp_path / "out")}
    assert set(graded) <= kept and len(kept) < len(list(subs.iterdir()))
    assert {row["student"] for row in gradebook(tmp_path / "out")} == kept


def test_a_lost_scheduler_stops_the_run_in_one_line_keeping_what_was_graded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from grader.batch import cluster

    monkeypatch.setattr(cluster, "STALL_S", 10.0)
    monkeypatch.setattr(cluster, "POLL_S", 0.5)
    subs = a_class(tmp_path / "subs", copies=3)
    with scheduler_and_workers(tmp_path, [[]]) as hand:
        graded: list[str] = []
        kill = kill_after(1, hand.scheduler, graded)
        killed_at: list[float] = []

        def progress(student: str, report: object, reused: bool) -> None:
            kill(student, report, reused)
            killed_at.append(time.monotonic())

        with pytest.raises(UsageError, match=r"lost the scheduler|no worker could take"):
            on_cluster(subs, tmp_path / "out", hand.address, on_progress=progress)
        # Said soon after: the run does not wait on the lost scheduler (Dask's timeouts).
        assert time.monotonic() - killed_at[0] < 5
    kept = {report.student for report in load_reports(tmp_path / "out")}
    assert set(graded) <= kept and len(kept) < len(list(subs.iterdir()))
