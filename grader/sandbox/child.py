"""What a forked child does: limits, then the submission, then the lab's probes.

Everything here runs in the child process, next to untrusted code. It only observes and writes
raw observations; it never decides a score. What the zygote must be able to trust goes on the
progress pipe in an order the submission cannot take back (protocol.py): the layers in force
before the import, and every integrity event (audit refusals, replaced attributes, torch modes
left active) before the task's record is written.
"""

from __future__ import annotations

import gc
import json
import linecache
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch.utils._device import DeviceContext

from grader.checks.integrity import integrity_uses
from grader.checks.policy import static_uses
from grader.checks.source import method_calls, parse
from grader.sandbox import audit, tamper, witness
from grader.sandbox.audit import INTEGRITY_EVENT
from grader.sandbox.containment import die_with_parent, private_proc
from grader.sandbox.exceptions import describe_exception
from grader.sandbox.limits import (
    SYSTEM_READABLE,
    apply_rlimits,
    apply_view,
    drop_capabilities,
    drop_privileges,
    filesystem_view,
    isolate_network,
    protected_targets,
    python_paths,
    restrict_syscalls,
)
from grader.sandbox.outside_meter import OutsideMeter
from grader.sandbox.probes_contract import import_probes
from grader.sandbox.protocol import Job
from grader.sandbox.wire import dumps

SUBMISSION_MODULE = "submission"
# Grader modules the child does not need and the submission must not reach: the judges and
# the references. The zygote never imports them; should one ever be loaded there, it is
# forgotten before the first fork.
FORGOTTEN = (".judge", ".reference")
# Modules whose code must not run again in the child (a reload; audit.install).
PROTECTED_PACKAGES = ("torch", "grader")

# Captured at import, before any submission: what the trusted path calls after student code ran.
_audit = sys.audit
_pwrite, _ftruncate, _close, _write = os.pwrite, os.ftruncate, os.close, os.write
_dup2 = os.dup2
_urandom = os.urandom
TOKEN_BYTES = 8  # of each task's `D` token (sandbox/protocol.py)
_function_modes = torch._C._len_torch_function_stack
_dispatch_modes = torch._C._len_torch_dispatch_stack
_pop_function_mode = torch._C._pop_torch_function_stack
_function_mode_at = torch._C._get_function_stack_at
_DeviceContext = DeviceContext
_type, _isinstance = type, isinstance


def call_student(func: Callable[..., Any], *args: Any, **kwargs: Any
                 ) -> tuple[Any, dict[str, Any] | None]:
    """(result, None), or (None, the exception as data): sys.exit in a function is that
    function's failure, not the probe's.

    A torch function mode the call leaves active would answer the grader's own reads of the
    tensors afterwards; it is popped here, before any observation, and reported through the
    audit hook (the function then fails). Dispatch modes are reported the same way: they
    cannot be popped from Python without unwinding the grader's own meters."""
    function_modes, dispatch_modes = _function_modes(), _dispatch_modes()
    try:
        return func(*args, **kwargs), None
    except BaseException as exc:
        return None, describe_exception(exc)
    finally:
        report_modes_left(function_modes, dispatch_modes)


def report_modes_left(function_modes: int, dispatch_modes: int) -> None:
    """Pop torch function modes above `function_modes` and report each, and report any
    change in the dispatch mode stack (the meters' own mode excepted). torch's own default
    device (`torch.set_default_device`, an exact DeviceContext) changes no answer and stays."""
    above = [_function_mode_at(index) for index in range(function_modes, _function_modes())]
    if all(_type(mode) is _DeviceContext for mode in above):
        return
    while _function_modes() > function_modes:
        mode = _pop_function_mode()
        if _type(mode) is not _DeviceContext:
            _audit(INTEGRITY_EVENT, f"mode left a torch function mode active "
                                    f"({_type(mode).__qualname__})")
    if _dispatch_modes() != dispatch_modes:
        _audit(INTEGRITY_EVENT, "mode changed the torch dispatch mode stack")


def read_submission(path: str) -> bytes:
    """The source, read while the child may still read the grader's folders; tracebacks get
    their lines from linecache, as the file itself may be unreadable after the uid drop."""
    with open(path, "rb") as handle:
        source = handle.read()
    text = source.decode("utf-8", errors="replace")
    linecache.cache[path] = (len(text), None, text.splitlines(keepends=True), path)
    return source


def import_submission(path: str, source: bytes) -> ModuleType:
    """Run the source as the `submission` module. It is compiled as the UTF-8 text the scans
    read, so a `# coding:` line cannot make the interpreter see other code than they did."""
    module = ModuleType(SUBMISSION_MODULE)
    module.__file__ = path
    sys.modules[SUBMISSION_MODULE] = module
    text = source.decode("utf-8", errors="replace")
    exec(compile(text, path, "exec"), module.__dict__)  # the submission, in this child only
    return module


def redirect_output(log_path: str) -> tuple[Any, Any]:
    """Student prints go to a log file, never to the grader's protocol pipe. Returns the
    new sys.stdout and sys.stderr (flushed by the child when each task's output begins)."""
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
    return sys.stdout, sys.stderr


def _open_outputs(job: Job, first_task: int) -> dict[int, int]:
    """Each task's output file, opened before the uid drop and the view (as the results)."""
    return {index: os.open(task.output_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            for index, task in enumerate(job.tasks)
            if index >= first_task and task.output_path}


def _output_to(fd: int | None, streams: tuple[Any, ...]) -> None:
    """From now on, what the submission prints goes to `fd` (a task's own output file).
    Python's buffers are flushed first, so that a print belongs to the task that made it."""
    if fd is None:
        return
    for stream in streams:
        try:  # noqa: SIM105 - no module lookups on the trusted path (contextlib is not watched)
            stream.flush()
        except BaseException:
            pass  # closed by the submission: nothing to flush
    _dup2(fd, 1)
    _dup2(fd, 2)


def keep_only(*fds: int) -> None:
    """Close every inherited descriptor above stderr but the progress pipe and the zygote's
    answers to it: the zygote's job pipe and its protocol channel to the grading process (one
    line written there would shift every later student's outcome), its namespace handle,
    anything else it held."""
    limit = os.sysconf("SC_OPEN_MAX")
    low = 3
    for fd in sorted(fds):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, max(limit, low + 1))


def _open_results(job: Job, first_task: int) -> dict[str, int]:
    """The result files, opened before the uid drop (the child cannot open them after). Only
    the job's first child describes the API (a later one starts after a failed task)."""
    paths = [t.result_path for t in job.tasks[first_task:]]
    if first_task == 0:
        paths.insert(0, job.api_path)
    return {path: os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) for path in paths}


def _save(record: dict[str, Any], fd: int) -> None:
    """Write one record from the start of its file, whatever the submission wrote there
    before, then close it. The zygote reads nothing of it; the grading process reads it once
    the job is over (a child killed mid-write leaves a truncated file: no result)."""
    data = memoryview(dumps(record))
    offset = 0
    while offset < len(data):
        offset += _pwrite(fd, data[offset:], offset)
    _ftruncate(fd, offset)
    _close(fd)


def working_folder(job: Job, first_task: int) -> str:
    """The child's working folder: the job's scratch folder, or for a child started after a
    failed task a fresh folder in it, so that module-level code which writes a file once
    (`open("out.txt", "x")`) imports again as it did the first time."""
    if first_task == 0:
        return job.scratch_path
    folder = os.path.join(job.scratch_path, f".child{first_task}")
    os.mkdir(folder, 0o700)
    if job.run_as is not None:
        os.chown(folder, job.run_as, job.run_as)
    return folder


def _open_arenas(job: Job, first_task: int, cases: list[list[dict[str, Any]]],
                 witnessed: Callable[[str, dict[str, Any]], list[witness.Spec]]
                 ) -> list[witness.Arena]:
    """Each task's arena, mapped now: after the view the job's folder cannot be opened."""
    return [witness.Arena(task.witness_path,
                          witness.layout(cases[index], partial(witnessed, task.function)))
            if task.witness_path and index >= first_task else witness.NO_ARENA
            for index, task in enumerate(job.tasks)]


def _read_cases(job: Job, first_task: int) -> list[list[dict[str, Any]]]:
    """Each task's cases; those in a file (hidden cases) are read now, before the view."""
    cases = []
    for index, task in enumerate(job.tasks):
        if task.cases_path and index >= first_task:
            with open(task.cases_path, encoding="utf-8") as handle:
                cases.append(json.load(handle))
        else:
            cases.append(task.cases)
    return cases


def scan_source(source: bytes, *, names: Sequence[str], package: str) -> dict[str, Any]:
    """The policy and integrity scans of the source (a StaticScan as data), made here before
    any student code runs: the syntax tree's memory is this child's, never the grader's."""
    try:
        parsed = parse(source.decode("utf-8", errors="replace"))
        integrity = integrity_uses(parsed, names=names)
        policy = static_uses(parsed, package=package, names=names) if package else {}
        calls = method_calls(parsed, names)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return {"error": type(exc).__name__}  # the import reports it
    return {"policy": policy, "integrity": integrity.by_name, "module": integrity.module,
            "anywhere": integrity.anywhere, "calls": calls}


@dataclass(frozen=True)
class Inherited:
    """What the zygote prepares once, before its first fork, for every child: the children
    start with exactly its modules, so what only depends on those is the same in each.
    Walking sys.modules in every child instead copies the zygote's pages into each
    (docs/sandbox.md#numbers-behind-the-code). A child receives it as an argument, never
    through a module global a submission could reach."""

    loaded: audit.LoadedModules  # the reload check's index
    watched: dict[str, Any]  # the tamper watch's namespaces


def prepare() -> Inherited:
    """In the zygote, once its probes are imported: forget the judges and references, guard
    the version counters (before the tamper snapshot, which then watches the guards), and
    index what every child inherits."""
    if forget_grader_modules():
        gc.collect()  # their objects gone from memory, not only from sys.modules
    audit.guard_version_counters()
    return Inherited(loaded=audit.loaded_modules(PROTECTED_PACKAGES), watched=tamper.watched())


def forget_grader_modules() -> int:
    """Take the judges and references out of reach by name: out of sys.modules and off their
    packages (an import of them is then refused by the audit hook). How many there were."""
    forgotten = [n for n in sys.modules if n.startswith("grader.") and n.endswith(FORGOTTEN)]
    for name in forgotten:
        module = sys.modules.pop(name)
        parent, _, leaf = name.rpartition(".")
        if getattr(sys.modules.get(parent), leaf, None) is module:
            delattr(sys.modules[parent], leaf)
    return len(forgotten)


def run_job(job: Job, *, first_task: int, progress_fd: int, answer_fd: int, layers: list[str],
            inherited: Inherited, streams: tuple[Any, ...] = ()) -> None:
    """Import the submission, describe its API, then run the tasks from `first_task` on.

    Progress goes to the zygote as lines (protocol.py): `P` with the layers in force, then `I`
    (imported) or `E` (the import failed), `S n` (task n started), `D n` (done), and `T` for
    integrity events; `M` and `m` around a call the zygote meters from outside, answered on
    `answer_fd` (outside_meter.py). Everything the zygote must believe is sent from locals of
    this frame, which the submission cannot reach.
    """
    progress = audit.progress_reporter(progress_fd)
    write = _write

    def send(message: str) -> None:
        write(progress_fd, f"{message}\n".encode())

    torch.set_num_threads(1)  # a forked child must not join the parent's OpenMP pool
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    # Memory from torch.empty is filled with NaN (deterministic mode; only warn where an op
    # has no deterministic kernel): code that reads a buffer it never wrote fails every
    # time, not only when the allocator happened to hand out non-zero memory.
    # (torch's C flag itself: torch.use_deterministic_algorithms also imports the compiler's
    # config in every child, to set a flag only compiled code reads:
    # docs/sandbox.md#numbers-behind-the-code.)
    torch._C._set_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True  # type: ignore[attr-defined]
    lab_probes = import_probes(job.lab)  # the zygote's, where it warmed this lab up
    remaining = len(job.tasks) - first_task
    cuda = any(t.device == "cuda" for t in job.tasks[first_task:])
    limits = layers + apply_rlimits(job, cpu_budget_s=job.timeout_s * max(remaining, 1) + 5,
                                    cuda=cuda)
    # CUDA talks to the driver through files, not the network, so it keeps working here.
    if isolate_network():
        limits.append("network namespace")
    source = read_submission(job.submission_path)
    cases = _read_cases(job, first_task)
    results = _open_results(job, first_task)
    outputs = _open_outputs(job, first_task)
    arenas = _open_arenas(job, first_task, cases, lab_probes.witnessed)  # before the view
    if job.scratch_path:
        os.chdir(working_folder(job, first_task))  # writable after the drop
    own = [Path(job.submission_path).parent] + ([Path(job.search_path)] if job.search_path else [])
    # The zygote and the grading process, their threads and groups. In a process namespace
    # of its own the child cannot name them at all; the filter covers the hosts without one.
    protected = protected_targets([p for p in (job.zygote_pid, job.grader_pid) if p])
    # The grader's own folders (the labs' outside the package too), found while the child may
    # still look at every path: after the uid drop a lab folder may not be visible.
    trusted = python_paths()
    view = filesystem_view(readable=[Path(p) for p in SYSTEM_READABLE] + trusted + own,
                           writable=[Path(job.scratch_path)] if job.scratch_path else [],
                           devices=cuda)  # its rules are made while every path can be opened
    if job.run_as is not None:
        limits += drop_privileges(job.run_as)
    limits += drop_capabilities()  # after the uid drop, which needs CAP_SETUID
    ends_with_worker = die_with_parent(progress_fd)  # after both drops, which clear it
    if apply_view(view):
        limits.append("file system view")
    filtered = restrict_syscalls(protected, channels=(progress_fd, answer_fd))  # kept set
    limits += filtered + (["ends with the worker"] if ends_with_worker and filtered else [])
    if job.search_path:
        sys.path.insert(0, job.search_path)  # helper modules the student keeps beside the file
    static = scan_source(source, names=lab_probes.FUNCTIONS, package=job.forbidden_package)
    untrusted = [Path(job.submission_path)] + own + (
        [Path(job.scratch_path)] if job.scratch_path else [])
    audit.install(trusted_roots=trusted, untrusted_roots=untrusted, report=progress,
                  report_call=audit.progress_reporter(progress_fd, "C"),
                  protected_prefixes=PROTECTED_PACKAGES, loaded=inherited.loaded)
    watched = inherited.watched
    if len(sys.modules) != inherited.loaded.count:  # a module came or went since the zygote
        forget_grader_modules()
        watched = tamper.watched()
    changes = tamper.watch(watched)
    task_event = audit.TASK_EVENT
    send("P " + json.dumps({"layers": [*limits, "audit hook"], "static": static}))
    header = {"nonce": job.nonce}
    function_modes, dispatch_modes = _function_modes(), _dispatch_modes()
    try:
        module = import_submission(job.submission_path, source)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt at import count too
        if first_task == 0:
            _save({**header, "import_error": describe_exception(exc)}, results[job.api_path])
        send("E")
        return
    report_modes_left(function_modes, dispatch_modes)
    for name in changes():
        progress(f"changed {name}")
    if first_task == 0:
        _save({**header, "api": lab_probes.describe_api(module)}, results[job.api_path])
    send("I")
    for index in range(first_task, len(job.tasks)):
        task = job.tasks[index]
        _audit(task_event, index)
        _output_to(outputs.get(index), streams)
        send(f"S {index}")
        observations = lab_probes.probe(module, task.function, device=task.device,
                                        cases=cases[index], arena=arenas[index],
                                        meter=OutsideMeter(progress_fd, answer_fd))
        changed = changes()
        for name in changed:
            progress(f"changed {name}")
        token = _urandom(TOKEN_BYTES).hex()  # drawn after the call: no forged `D` holds it
        _save({**header, "token": token, "observations": observations},
              results[task.result_path])
        send(f"D {index} {token}")
        if changed:
            return  # later tasks get a fresh child, with torch as it was


def child_main(job: Job, *, first_task: int, progress_fd: int, answer_fd: int,
               inherited: Inherited) -> None:
    """Entry point right after fork; always ends with os._exit."""
    code = 1
    try:
        keep_only(progress_fd, answer_fd)
        os.setsid()
        layers = ["private /proc"] if private_proc() else []
        streams = redirect_output(job.log_path)
        run_job(job, first_task=first_task, progress_fd=progress_fd, answer_fd=answer_fd,
                layers=layers, inherited=inherited, streams=streams)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)
