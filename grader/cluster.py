"""Grading a class on a Dask cluster (`grade --cluster ADDRESS`): the reports a local `grade`
writes, from workers on other machines (docs/cluster.md).

This process stays the only one that reads submissions and writes files: it reads and hashes
each submission, reuses a report already on disk, and writes reports, feedback and the
gradebook exactly as locally (batch.py). A Dask worker only grades: it keeps its sandboxes
(sandbox/, every layer as locally) for its lifetime (SandboxPlugin) and sends the report back
as JSON. Dask reschedules the submissions of a worker that died; a submission that took down
workers as often as the scheduler allows (`distributed.scheduler.allowed-failures`) becomes an
error row that says so, and the rest of the class is graded.

Only `--cluster` imports this module: Dask is the optional extra `inplace-grader[cluster]`.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from grader.batch import BatchOptions, BatchResult, Pending, grading_failed, prepare, stamped
from grader.engine import CheckOptions, grade_submission
from grader.errors import UsageError
from grader.layouts import Found
from grader.models import Report
from grader.sandbox import Sandbox
from grader.sandbox.runner import BATCH_PRELOAD, OWN_FOLDER_LIMIT
from grader.submission import Submission

try:
    import distributed
except ImportError as exc:  # one line for the user, not a traceback (GraderGroup.main)
    raise UsageError("--cluster needs Dask: pip install 'inplace-grader[cluster]'") from exc

LOCAL = re.compile(r"local(?::(?P<workers>[1-9][0-9]{0,3}))?")
SCHEDULER = re.compile(r"(tcp|tls)://(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}")
PLUGIN = "inplace-grader-sandboxes"
GPU = "GPU"  # the resource a worker with a CUDA device declares: dask worker --resources GPU=1
# Cluster workers' uid slots start here, above those of a local `grade` on the same machine.
FIRST_CLUSTER_SLOT = 512


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
    """A client of the scheduler at `address`, or of a cluster of single-threaded worker
    processes on this machine (`local[:N]`, N defaulting to `workers`)."""
    where, count = parse_address(address)
    if where == "local":
        with distributed.LocalCluster(n_workers=count or workers, threads_per_worker=1,
                                      processes=True, host="127.0.0.1",
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            yield client
        return
    try:
        client = distributed.Client(where, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"--cluster {where}: no Dask scheduler answered ({exc})") from None
    with client:
        yield client


class WorkerSandboxes:
    """A Dask worker's sandboxes: one per lab and thread, started on first use (the zygote
    boots once per worker, not once per student) and closed with the worker."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sandboxes: dict[tuple[str, int], tuple[Sandbox, int]] = {}

    def get(self, lab: str) -> Sandbox:
        from grader.sandbox.limits import claim_slot

        key = (lab, threading.get_ident())
        with self._lock:
            if key not in self._sandboxes:
                slot, held = claim_slot(FIRST_CLUSTER_SLOT)  # held while the sandbox lives
                self._sandboxes[key] = (Sandbox([lab], uid_slot=slot, preload=BATCH_PRELOAD),
                                        held)
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
        for sandbox, held in closing:
            _close(sandbox, held)


def _close(sandbox: Sandbox, held: int) -> None:
    sandbox.close()
    os.close(held)  # the uid slot is free again


class SandboxPlugin(distributed.WorkerPlugin):
    """Gives each worker its sandboxes, and closes them (their zygotes) with the worker."""

    name = PLUGIN

    def setup(self, worker: distributed.Worker) -> None:
        worker.inplace_grader_sandboxes = WorkerSandboxes()  # type: ignore[attr-defined]

    def teardown(self, worker: distributed.Worker) -> None:
        sandboxes = getattr(worker, "inplace_grader_sandboxes", None)
        if sandboxes is not None:
            sandboxes.close()


@dataclass(frozen=True)
class Work:
    """What travels to a worker for one student: the submission (its source), the files of
    the student's own folder as bytes (helper modules beside it), the lab and the options."""

    lab: str
    submission: Submission
    folder: dict[str, bytes]
    check: CheckOptions


def grade_on_worker(work: Work) -> str:
    """On a Dask worker: the report's JSON. The student's folder is rebuilt in a private
    temporary folder; the submission runs only in this worker's sandbox."""
    worker = distributed.get_worker()
    sandboxes = getattr(worker, "inplace_grader_sandboxes", None)
    if sandboxes is None:  # a worker that joined before the plugin reached it
        sandboxes = worker.inplace_grader_sandboxes = WorkerSandboxes()  # type: ignore[attr-defined]
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


def gpu_workers(client: distributed.Client) -> list[str]:
    """The addresses of the workers that declare a GPU resource."""
    workers = client.scheduler_info().get("workers", {})
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
    """A student's folder as {relative path: bytes}: regular files only (a link could name
    any file of this machine), Python files first, then the smallest, at most
    OWN_FOLDER_LIMIT bytes in all, as the local sandbox copies it (runner._own_copy)."""
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


def graded_on_cluster(students: list[Found], options: BatchOptions, result: BatchResult
                      ) -> Generator[tuple[Report, bool], None, None]:
    """(report, reused) per student as the cluster finishes them (batch.grade_class)."""
    with connect(options.cluster, workers=options.workers) as client:
        client.register_plugin(SandboxPlugin(), name=PLUGIN)
        result.cluster_workers = len(client.scheduler_info().get("workers", {}))
        device, resources = route(options.check.device, gpu_workers(client))
        check = replace(options.check, device=device)
        futures: dict[Any, Pending] = {}
        try:
            for found in students:
                pending = prepare(found, options)
                if not isinstance(pending, Pending):
                    yield pending
                    continue
                folder = (own_folder_files(pending.submission.search_path)
                          if pending.submission.search_path is not None else {})
                work = Work(options.lab, pending.submission, folder, check)
                future = client.submit(grade_on_worker, work, pure=False,
                                       resources=resources or None,
                                       key=f"grade-{pending.digest[:16]}-{len(futures)}")
                futures[future] = pending
            for future in distributed.as_completed(list(futures)):
                yield _report_of(future, futures.pop(future), options), False
        finally:  # interrupted, or closed by the caller: nothing more runs
            client.cancel(list(futures))


def _report_of(future: distributed.Future, pending: Pending, options: BatchOptions) -> Report:
    """The worker's report, or the student's error row where none came back."""
    try:
        text = future.result()
    except distributed.KilledWorker:
        return grading_failed(pending.found, "it ended the grading worker each time it ran "
                              "(as often as the cluster allows): not graded", options,
                              pending.digest)
    except Exception as exc:  # the grader's own failure on the worker
        return grading_failed(pending.found, f"internal error while grading: {exc}", options,
                              pending.digest)
    return stamped(Report.model_validate_json(text), pending.found, pending.digest)
