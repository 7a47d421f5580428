"""Grading a class on a Dask cluster (`grade --cluster ADDRESS`): the reports a local `grade`
writes, from workers on other machines (docs/cluster.md).

This process stays the only one that reads submissions and writes files: it reads and hashes
each submission, reuses a report already on disk, and writes reports, feedback and the
gradebook exactly as locally (batch/__init__.py). A Dask worker only grades: it keeps its sandboxes
(sandbox/, every layer as locally) for its lifetime (SandboxPlugin) and sends the report back
as JSON. Dask reschedules the submissions of a worker that died; a submission that took down
workers as often as the scheduler allows (`distributed.scheduler.allowed-failures`) becomes an
error row that says so, and the rest of the class is graded.

Only `--cluster` imports this module (the CLI picks this executor): Dask is the optional extra
`inplace-grader[cluster]`.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from grader.batch.options import BatchOptions, BatchResult, Graded
from grader.batch.prepare import Pending, grading_failed, prepare, stamped
from grader.engine import CheckOptions, grade_submission, internal_error
from grader.errors import UsageError
from grader.layouts import Found
from grader.models import Report
from grader.sandbox import Sandbox
from grader.sandbox.runner import BATCH_PRELOAD, OWN_FOLDER_LIMIT
from grader.submission import Submission

try:
    import dask
    import distributed
except ImportError as exc:  # one line for the user, not a traceback (GraderGroup.main)
    raise UsageError("--cluster needs Dask: pip install 'inplace-grader[cluster]'") from exc

LOCAL = re.compile(r"local(?::(?P<workers>[1-9][0-9]{0,3}))?")
SCHEDULER = re.compile(r"(tcp|tls)://(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}")
PLUGIN = "inplace-grader-sandboxes"
GPU = "GPU"  # the resource a worker with a CUDA device declares: dask worker --resources GPU=1
# Seconds without any worker able to take the class's submissions (every worker, or every GPU
# worker, gone) before the run stops with what it has: Dask would wait for one forever.
STALL_S = 120.0
# What a local cluster's HTTP servers listen on and serve (see connect).
LOOPBACK_ANY_PORT = "127.0.0.1:0"
HTTP_ROUTES = ("distributed.scheduler.http.routes", "distributed.worker.http.routes")
POLL_S = 5.0
# How long a scheduler named by --cluster may take to answer, then to have a worker.
CONNECT_S = 10.0
WORKERS_S = 30.0


def parse_address(text: str) -> tuple[str, int | None]:
    """("local", workers or None) for `local[:N]`, (address, None) for a scheduler's address;
    UsageError for anything else."""
    text = text.strip()
    if match := LOCAL.fullmatch(text):
        workers = match.group("workers")
        return "local", int(workers) if workers else None
    if SCHEDULER.fullmatch(text):
        return text, None
    raise UsageError(f"--cluster {text!r}: expected a scheduler address (tcp://HOST:PORT, "
                     "tls://HOST:PORT) or local[:N]")


@contextlib.contextmanager
def connect(address: str, *, workers: int) -> Iterator[distributed.Client]:
    """A client of the scheduler at `address`, with at least one worker that runs this
    grader and torch; or, for `local[:N]`, of N workers inside this process (N defaulting to
    `workers`): threads that each keep their own sandbox, talking in-process, with no
    port that takes work (a port on 127.0.0.1 would run any local user's code as the grader).
    Dask's scheduler and workers still open an HTTP server each, whatever the options (on
    0.0.0.0:8787 by default): bound here to 127.0.0.1 and serving no page."""
    where, count = parse_address(address)
    with contextlib.ExitStack() as stack:
        if where == "local":
            with dask.config.set({key: [] for key in HTTP_ROUTES}):  # read as they start
                cluster = stack.enter_context(distributed.LocalCluster(
                    n_workers=count or workers, threads_per_worker=1, processes=False,
                    dashboard_address=None, worker_dashboard_address=LOOPBACK_ANY_PORT,
                    worker_class=_PagelessWorker, resources=_local_gpu(),
                    scheduler_kwargs={"dashboard": False,
                                      "dashboard_address": LOOPBACK_ANY_PORT}))
            client = stack.enter_context(distributed.Client(cluster))
        else:
            try:
                client = stack.enter_context(distributed.Client(where, timeout=CONNECT_S))
                client.wait_for_workers(1, timeout=WORKERS_S)
            except Exception as exc:  # refused, timed out, TLS without its configuration
                raise UsageError(f"--cluster {where}: no Dask scheduler with a worker answered "
                                 f"({type(exc).__name__}: {str(exc)[:200]})") from None
            _check_versions(client, where)
        yield client


class _PagelessWorker(distributed.Worker):
    """A local worker without Dask's dashboard pages (served with bokeh installed):
    LocalCluster turns them on whenever its workers' HTTP address is given."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "dashboard": False})


def _local_gpu() -> dict[str, float] | None:
    """The GPU resource each local worker declares where this machine has CUDA."""
    import torch

    return {GPU: 1} if torch.cuda.is_available() else None


def _versions() -> tuple[str, str]:
    import torch

    from grader import __version__

    return __version__, torch.__version__


def _check_versions(client: distributed.Client, address: str) -> None:
    """UsageError where a worker runs another grader or torch than this process: its reports
    would be filed under this grader's hash (resume would keep them)."""
    here = _versions()
    try:
        found = client.run(_versions)
    except Exception as exc:  # a worker without this grader installed
        raise UsageError(f"--cluster {address}: a worker cannot run inplace-grader "
                         f"({type(exc).__name__}: {str(exc)[:200]})") from None
    other = sorted(f"{worker} ({grader}, torch {torch})"
                   for worker, (grader, torch) in found.items() if (grader, torch) != here)
    if other:
        raise UsageError(f"--cluster {address}: workers run another inplace-grader or torch "
                         f"than this {here[0]} with torch {here[1]}: {', '.join(other)}")


class WorkerSandboxes:
    """A Dask worker's sandboxes: one per lab and thread, started on first use (the zygote
    boots once per worker, not once per student) and closed with the worker."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sandboxes: dict[tuple[str, int], tuple[Sandbox, int | None]] = {}
        self._closed = False

    def get(self, lab: str) -> Sandbox:
        from grader.sandbox.limits import held_slot

        key = (lab, threading.get_ident())
        with self._lock:
            if self._closed:  # the run ended while this task was on its way
                raise RuntimeError("this grading run has ended")
            if key not in self._sandboxes:
                slot, held = held_slot()
                try:
                    sandbox = Sandbox([lab], uid_slot=slot, preload=BATCH_PRELOAD,
                                      hold=held)  # held while its zygote lives too
                except BaseException:
                    if held is not None:
                        os.close(held)
                    raise
                self._sandboxes[key] = (sandbox, held)
            return self._sandboxes[key][0]

    def replace(self, lab: str) -> None:
        """After the grader's own failure: a fresh sandbox next time."""
        with self._lock:
            found = self._sandboxes.pop((lab, threading.get_ident()), None)
        if found is not None:
            _close(*found)

    def close(self) -> None:
        with self._lock:
            closing, self._sandboxes = list(self._sandboxes.values()), {}
            self._closed = True
        for sandbox, held in closing:
            _close(sandbox, held)


def _close(sandbox: Sandbox, held: int | None) -> None:
    sandbox.close()
    if held is not None:
        os.close(held)  # the uid slot is free again once its zygote is gone too


class SandboxPlugin(distributed.WorkerPlugin):
    """Gives each worker the sandboxes of one `grade` run, and closes them (their zygotes)
    when the run unregisters it or the worker closes. One plugin per run: registering a
    plugin of a name already there tears the old one down, which would end another run's
    jobs on a shared scheduler."""

    def __init__(self, run: str) -> None:
        self.run = run
        self.name = f"{PLUGIN}-{run}"

    def setup(self, worker: distributed.Worker) -> None:
        _runs(worker)[self.run] = WorkerSandboxes()

    def teardown(self, worker: distributed.Worker) -> None:
        sandboxes = _runs(worker).pop(self.run, None)
        if sandboxes is not None:
            sandboxes.close()


def _runs(worker: distributed.Worker) -> dict[str, WorkerSandboxes]:
    """The sandboxes of each run this worker grades for, kept on the worker itself."""
    if not hasattr(worker, "inplace_grader_runs"):
        worker.inplace_grader_runs = {}  # type: ignore[attr-defined]
    return worker.inplace_grader_runs  # type: ignore[attr-defined, no-any-return]


@dataclass(frozen=True)
class Work:
    """What travels to a worker for one student: the submission (its source), the files of
    the student's own folder as bytes (helper modules beside it), the lab and the options."""

    run: str  # the `grade` run (SandboxPlugin)
    lab: str
    submission: Submission
    folder: dict[str, bytes]
    check: CheckOptions


def grade_on_worker(work: Work) -> str:
    """On a Dask worker: the report's JSON. The student's folder is rebuilt in a private
    temporary folder; the submission runs only in this worker's sandbox."""
    worker = distributed.get_worker()
    sandboxes = _runs(worker)[work.run]  # set up on every worker before any task runs
    with tempfile.TemporaryDirectory(prefix="inplace-grader-folder-") as folder:
        submission = work.submission
        if submission.search_path is not None:
            _rebuild(Path(folder), work.folder)
            submission = replace(submission, search_path=Path(folder))
        try:
            report = grade_submission(submission, lab=work.lab, options=work.check,
                                      sandbox=sandboxes.get(work.lab))
        except Exception:
            sandboxes.replace(work.lab)
            raise
    return report.model_copy(update={"graded_on": worker.address}).model_dump_json()


def gpu_workers(workers: dict[str, dict[str, Any]]) -> list[str]:
    """The addresses of the workers that declare a GPU resource."""
    return [address for address, info in workers.items()
            if (info.get("resources") or {}).get(GPU, 0) >= 1]


def route(device: str, gpus: list[str]) -> tuple[str, dict[str, Any]]:
    """(the device option the workers grade with, the resources a submission's task needs).
    CUDA checks run only on workers that declare a GPU, and there every device's checks run;
    without one, `auto` grades the CPU checks anywhere (the CUDA ones are reported skipped, as
    on a machine without CUDA), so no undeclared GPU decides a student's rows."""
    if device == "cpu":
        return "cpu", {}
    if gpus:
        return device, {GPU: 1}
    if device == "cuda":
        raise UsageError("--device cuda: no worker of the cluster declares a GPU (start one "
                         "with: dask worker ADDRESS --resources GPU=1)")
    return "cpu", {}


def own_folder_files(folder: Path) -> dict[str, bytes]:
    """A student's folder as {relative path: bytes}: regular files only (a link would name a
    file of the worker's machine), Python files first, then the smallest, at most
    OWN_FOLDER_LIMIT bytes in all (the limit of the local sandbox's copy, runner._own_copy).
    Raises OSError where a file cannot be read."""
    found = []
    for path in folder.rglob("*"):
        info = path.lstat()
        if stat.S_ISREG(info.st_mode):
            found.append((path.suffix != ".py", info.st_size, str(path), path))
    files: dict[str, bytes] = {}
    total = 0
    for _, size, _, path in sorted(found):
        if total + size > OWN_FOLDER_LIMIT:
            continue
        files[path.relative_to(folder).as_posix()] = path.read_bytes()
        total += size
    return files


def _rebuild(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        relative = PurePosixPath(name)
        if relative.is_absolute() or ".." in relative.parts:
            continue  # never outside the folder
        target = folder.joinpath(*relative.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


class ClusterExecutor:
    """Grade on the Dask cluster at `address` (a scheduler's, or local[:N]: parse_address)."""

    def __init__(self, address: str) -> None:
        parse_address(address)
        self.address = address

    def graded(self, students: list[Found], options: BatchOptions, result: BatchResult
               ) -> Graded:
        """(report, reused) per student as the cluster finishes them (batch.grade_class). A
        few submissions per worker are in flight at a time: the client's and the
        scheduler's memory stay flat however large the class."""
        run = uuid.uuid4().hex
        with connect(self.address, workers=options.workers) as client:
            plugin = SandboxPlugin(run)
            client.register_plugin(plugin, name=plugin.name)
            try:
                yield from _graded(client, self.address, run, students, options, result)
            finally:
                # A lost scheduler took its plugins with it: asking would wait out the
                # client's timeout after the run had already said so.
                if client.status == "running":
                    with contextlib.suppress(Exception):
                        client.unregister_worker_plugin(plugin.name)


def _graded(client: distributed.Client, address: str, run: str, students: list[Found],
            options: BatchOptions, result: BatchResult) -> Graded:
    workers = _scheduler_workers(client)
    result.cluster_workers = len(workers)
    device, resources = route(options.check.device, gpu_workers(workers))
    # Hashed as graded: a run with a GPU worker later grades the CUDA checks anew.
    options = replace(options, check=replace(options.check, device=device))
    window = 4 * max(1, len(workers))
    in_flight: dict[distributed.Future, Pending] = {}
    waiting = enumerate(students)
    able_since = time.monotonic()  # when a worker that can take the class was last seen
    try:
        while True:
            while len(in_flight) < window and (next_one := next(waiting, None)) is not None:
                index, found = next_one
                work, pending = _work(run, found, options)
                if not isinstance(work, Work):
                    yield work, bool(pending)  # nothing to run: (report, reused)
                    continue
                assert isinstance(pending, Pending)
                future = client.submit(grade_on_worker, work, pure=False,
                                       resources=resources or None,
                                       key=f"grade-{run}-{index}-{pending.digest[:12]}")
                in_flight[future] = pending
            if not in_flight:
                return
            done = _first_done(client, list(in_flight), address)
            if not done:
                if _can_grade(client, resources):
                    able_since = time.monotonic()
                elif time.monotonic() - able_since >= STALL_S:
                    raise UsageError(
                        f"--cluster {address}: for {STALL_S:.0f} s no worker could take "
                        f"the class ({'a GPU worker is needed' if resources else 'none left'}); "
                        "what was graded is kept: start workers and run the same command")
                continue
            able_since = time.monotonic()
            for future in done:
                yield _report_of(future, in_flight.pop(future), options), False
    finally:  # interrupted, or closed by the caller: nothing more runs
        with contextlib.suppress(Exception):
            client.cancel(list(in_flight))


def _work(run: str, found: Found, options: BatchOptions
          ) -> tuple[Work, Pending] | tuple[Report, bool]:
    """(what to send, the client's record of it) for a student, or their (report, reused)
    where nothing needs to run."""
    pending = prepare(found, options)
    if not isinstance(pending, Pending):
        return pending
    search_path = pending.submission.search_path
    try:
        folder = own_folder_files(search_path) if search_path is not None else {}
    except OSError as exc:
        return grading_failed(found, f"{search_path}: cannot read the student's folder "
                              f"({exc.strerror or exc})", options), False
    return Work(run, options.lab, pending.submission, folder, options.check), pending


def _first_done(client: distributed.Client, futures: list[distributed.Future],
                address: str) -> set[distributed.Future]:
    """The futures done within POLL_S (none: still running, or nowhere to run). UsageError
    where the scheduler is gone: the client cancels every future then."""
    try:
        with client.as_current():  # wait() asks the default client
            return set(distributed.wait(futures, timeout=POLL_S,
                                        return_when="FIRST_COMPLETED").done)
    except (TimeoutError, distributed.TimeoutError):  # one type from Python 3.11 on
        return set()
    except distributed.CancelledError:
        if client.status != "running":
            raise UsageError(f"--cluster {address}: lost the scheduler; what was "
                             "graded is kept: run the same command to resume") from None
        return {future for future in futures if future.done()}


def _can_grade(client: distributed.Client, resources: dict[str, Any]) -> bool:
    """Whether a worker the submissions can run on is attached now (never, once the client
    lost its scheduler: its list of workers would be the last one it saw)."""
    if client.status != "running":
        return False
    workers = _scheduler_workers(client)
    return bool(gpu_workers(workers) if resources else workers)


def _scheduler_workers(client: distributed.Client) -> dict[str, dict[str, Any]]:
    """Every worker the scheduler knows, by address, with its declared resources."""
    try:
        info = client.scheduler_info(n_workers=-1)
    except TypeError:  # releases before the parameter listed every worker
        info = client.scheduler_info()
    return dict(info.get("workers", {}))


def _report_of(future: distributed.Future, pending: Pending, options: BatchOptions) -> Report:
    """The worker's report, or the student's error row where none came back. Such a row is
    not keyed by the submission's hash: it says nothing of the code, and a re-run grades it
    again (a preempted node, a lost scheduler)."""
    try:
        text = future.result(timeout=STALL_S)  # a result lost with its worker: never comes
    except distributed.KilledWorker:
        return grading_failed(pending.found, "the grading worker ended while grading it, as "
                              "often as the cluster allows: not graded (a re-run tries again)",
                              options)
    except Exception as exc:  # the grader's own failure on the worker, a lost scheduler
        return grading_failed(pending.found, internal_error(exc), options)
    return stamped(Report.model_validate_json(text), pending.found, pending.digest)
