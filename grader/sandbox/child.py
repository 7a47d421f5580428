"""What a forked child does: limits, then the submission, then the lab's probes.

Everything here runs in the child process, next to untrusted code. It only observes and writes
raw observations; it never decides a score.
"""

from __future__ import annotations

import importlib
import linecache
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from grader.checks import tensors
from grader.sandbox import tamper
from grader.sandbox.limits import (
    SYSTEM_READABLE,
    apply_rlimits,
    apply_view,
    drop_privileges,
    filesystem_view,
    isolate_network,
    protected_targets,
    python_paths,
    restrict_syscalls,
)
from grader.sandbox.protocol import Job

SUBMISSION_MODULE = "submission"


def describe_exception(exc: BaseException) -> dict[str, Any]:
    """An exception as plain data, with the traceback limited to the submission's frames."""
    frames = traceback.extract_tb(exc.__traceback__)
    student = [f for f in frames if f.filename.endswith(os.sep + "submission.py")]
    location = ""
    if isinstance(exc, SyntaxError):
        location = f"line {exc.lineno}"
    elif student:
        location = f"line {student[-1].lineno} ({student[-1].line or ''})".strip()
    return {
        "type": type(exc).__name__,
        "bases": [cls.__name__ for cls in type(exc).__mro__],
        "message": str(exc).splitlines()[0][:500] if str(exc) else "",
        "location": location,
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[
            -4000:
        ],
    }


def call_student(func: Callable[..., Any], *args: Any, **kwargs: Any
                 ) -> tuple[Any, dict[str, Any] | None]:
    """(result, None), or (None, the exception as data): sys.exit in a function is that
    function's failure, not the probe's."""
    try:
        return func(*args, **kwargs), None
    except BaseException as exc:
        return None, describe_exception(exc)


def read_submission(path: str) -> bytes:
    """The source, read while the child may still read the grader's folders; tracebacks get
    their lines from linecache, as the file itself may be unreadable after the uid drop."""
    with open(path, "rb") as handle:
        source = handle.read()
    text = source.decode("utf-8", errors="replace")
    linecache.cache[path] = (len(text), None, text.splitlines(keepends=True), path)
    return source


def import_submission(path: str, source: bytes) -> ModuleType:
    module = ModuleType(SUBMISSION_MODULE)
    module.__file__ = path
    sys.modules[SUBMISSION_MODULE] = module
    exec(compile(source, path, "exec"), module.__dict__)  # the submission, in this child only
    return module


def redirect_output(log_path: str) -> None:
    """Student prints go to a log file, never to the grader's protocol pipe."""
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    null_fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null_fd, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    os.close(null_fd)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the fds outlive this function
    sys.stdout = open(1, "w", closefd=False, buffering=1)  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115


def _progress(fd: int, message: str) -> None:
    os.write(fd, f"{message}\n".encode())


def _open_results(job: Job, first_task: int) -> dict[str, int]:
    """The result files, opened before the uid drop (the child cannot open them after)."""
    paths = [job.api_path] * (first_task == 0) + [t.result_path for t in job.tasks[first_task:]]
    return {path: os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) for path in paths}


def _save(record: dict[str, Any], fd: int) -> None:
    """Write one record. The zygote reads it only after this task's `D` line; a child killed
    mid-write leaves a truncated file, which loads as no result."""
    from grader.sandbox.wire import dumps

    data = memoryview(dumps(record))
    while data:
        data = data[os.write(fd, data):]
    os.close(fd)


def run_job(job: Job, *, first_task: int, progress_fd: int) -> None:
    """Import the submission, describe its API, then run the tasks from `first_task` on.

    Progress goes to the zygote as lines: `I` (imported) or `E` (the import failed),
    `S n` (task n started), `D n` (done).
    """
    import torch

    torch.set_num_threads(1)  # a forked child must not join the parent's OpenMP pool
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    lab_probes = importlib.import_module(f"grader.labs.{job.lab}.probes")
    remaining = len(job.tasks) - first_task
    cuda = any(t.device == "cuda" for t in job.tasks[first_task:])
    limits = apply_rlimits(job, cpu_budget_s=job.timeout_s * max(remaining, 1) + 5, cuda=cuda)
    # CUDA talks to the driver through files, not the network, so it keeps working here.
    if isolate_network():
        limits.append("network namespace")
    source = read_submission(job.submission_path)
    results = _open_results(job, first_task)
    if job.scratch_path:
        os.chdir(job.scratch_path)  # the student's working folder, writable after the drop
    own = [Path(job.submission_path).parent] + ([Path(job.search_path)] if job.search_path else [])
    # The zygote and the grading process, their threads and groups, found while /proc is open.
    protected = protected_targets([os.getppid()] + ([job.grader_pid] if job.grader_pid else []))
    view = filesystem_view(readable=[Path(p) for p in SYSTEM_READABLE] + python_paths() + own,
                           writable=[Path(job.scratch_path)] if job.scratch_path else [],
                           devices=cuda)  # its rules are made while every path can be opened
    if job.run_as is not None:
        limits += drop_privileges(job.run_as)
    if apply_view(view):
        limits.append("file system view")
    limits += restrict_syscalls(protected)
    header = {"nonce": job.nonce, "limits": limits}
    if job.search_path:
        sys.path.insert(0, job.search_path)  # helper modules the student keeps beside the file
    clean = tamper.snapshot()
    tamper_changes = tamper.changes  # bound now: a submission may replace the module's own
    try:
        module = import_submission(job.submission_path, source)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt at import count too
        _save({**header, "import_error": describe_exception(exc)}, results[job.api_path])
        _progress(progress_fd, "E")
        return
    if first_task == 0:
        _save({**header, "api": lab_probes.describe_api(module),
               "tampered": tamper_changes(clean)}, results[job.api_path])
    _progress(progress_fd, "I")
    for index in range(first_task, len(job.tasks)):
        task = job.tasks[index]
        _progress(progress_fd, f"S {index}")
        tensors.subclasses_seen(reset=True)
        observations = lab_probes.probe(module, task.function, device=task.device,
                                        cases=task.cases)
        changed = tamper_changes(clean)
        _save({**header, "observations": observations, "tampered": changed,
               "tensor_subclasses": tensors.subclasses_seen()}, results[task.result_path])
        _progress(progress_fd, f"D {index}")
        if changed:
            return  # later tasks get a fresh child, with torch as it was


def child_main(job: Job, *, first_task: int, progress_fd: int) -> None:
    """Entry point right after fork; always ends with os._exit."""
    code = 1
    try:
        os.setsid()
        redirect_output(job.log_path)
        run_job(job, first_task=first_task, progress_fd=progress_fd)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)
