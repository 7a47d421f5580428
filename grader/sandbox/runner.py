"""The grading process's side of the sandbox: start the zygote, send units, read results."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from grader.models import Limits
from grader.sandbox.limits import choose_uid, job_uid, readable_by_others
from grader.sandbox.probes_contract import LABS_VARIABLE, lab_folders
from grader.sandbox.protocol import Job, JobOutcome, Task, TaskOutcome

if TYPE_CHECKING:
    from grader.sandbox import witness

# Variables the child must not inherit or must have: one thread per child (fork + OpenMP
# hazard, reproducible fp32 sums), a small malloc arena count (RLIMIT_AS headroom), NVML-based
# CUDA detection so nothing in the zygote initialises CUDA. The fixed malloc thresholds keep
# the outside memory meter honest: glibc's default thresholds grow with the blocks a process
# frees, after which a temporary can reuse pages already resident and raise no peak (a
# submission could arrange that at import); fixed, every block of 128 KiB or more is mapped
# fresh and returned when freed.
_CHILD_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "MALLOC_ARENA_MAX": "2",
    "MALLOC_MMAP_THRESHOLD_": str(128 * 1024),
    "MALLOC_TRIM_THRESHOLD_": str(128 * 1024),
    "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
}
_KEEP_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "VIRTUAL_ENV", "CUDA_VISIBLE_DEVICES",
             "LD_LIBRARY_PATH", "TMPDIR")


@dataclass(frozen=True)
class TaskSpec:
    """What to probe: one lab function on one device, with its cases. `private` cases (hidden
    ones) travel in a file the child reads before its view closes, never through the zygote,
    whose memory every later child inherits."""

    function: str
    device: str
    cases: list[dict[str, Any]]
    private: bool = False
    # The case's tensors the function updates in place (Lab.witnessed): they live in an arena
    # the grading process reads after the job (sandbox/witness.py). CPU only.
    witness: witness.Witnessed | None = None


@dataclass(frozen=True)
class JobResult:
    """What came back: how the child(ren) ended, and the records they wrote (None: none)."""

    outcome: JobOutcome
    api: dict[str, Any] | None
    tasks: list[tuple[TaskOutcome, dict[str, Any] | None]]
    log: str
    # Per task, the final values of its witnessed tensors by case id (the caller's memory).
    witnessed: list[dict[str, list[Any]]] = field(default_factory=list)
    # Per task, the tail of what it printed (`log` holds what the import printed).
    outputs: list[str] = field(default_factory=list)
    # Bytes printed in all, measured here: the import's (`log`), then each task's. At the
    # file size limit, the output was cut there and the print that reached it raised.
    log_bytes: int = 0
    output_bytes: list[int] = field(default_factory=list)
    # The zygote's phases (zygote.PHASES) and the grading process's own: "ready" (waiting for
    # a fresh zygote), "wait" (the job, send to outcome), "decode" (its records). Seconds.
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def protections(self) -> list[str]:
        """The layers in force, as the zygote saw them applied (never the child's records)."""
        return self.outcome.protections


# What a batch worker's zygote loads besides torch and the probes. torch.optim's methods import
# torch's compiler on their first call (torch._disable_dynamo): without it here, each student
# who calls torch.optim (forbidden, but some do) pays that import in their own child
# (docs/sandbox.md#numbers-behind-the-code); with it, the worker pays once. A single
# `check` leaves it out: its one child rarely needs it.
BATCH_PRELOAD = ("torch._dynamo",)


class SandboxError(RuntimeError):
    """The zygote itself failed (not the submission): an internal error."""


def child_environment() -> dict[str, str]:
    env = {key: os.environ[key] for key in _KEEP_ENV if key in os.environ}
    env.update(_CHILD_ENV)
    # The worker imports this very grader package, wherever it was imported from here (a
    # checkout, a zip, a moved editable install), not whatever `grader` its path would find.
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    # The labs outside the package, made absolute: the worker runs in a folder of its own.
    if folders := lab_folders(os.environ):
        env[LABS_VARIABLE] = os.pathsep.join(map(str, folders))
    return env


class Sandbox:
    """A zygote process plus a private work folder; use as a context manager.

    `run(...)` sends one unit, waits for its outcome, and loads the observations the child
    wrote (JSON and raw tensor bytes, see wire.py: loading never runs code).
    """

    protections = ("separate process", "process group kill", "child subreaper",
                   "closed descriptors", "trusted deadlines")

    def __init__(self, labs: list[str], *, run_as: int | Literal["auto"] | None = "auto",
                 uid_slot: int = 0, user_namespace: bool | None = None,
                 preload: tuple[str, ...] = (), hold: int | None = None) -> None:
        """`run_as`: the uid children drop to; "auto" chooses one when running as root
        (limits.choose_uid; sandboxes running side by side pass distinct `uid_slot`s), and
        then each job takes the next uid of this sandbox's own range (limits.job_uid), so a
        process one job left behind shares no uid with the next. An explicit uid is used for
        every job; None keeps the grader's uid.

        `user_namespace`: make the children's process namespaces from a user namespace of
        the zygote's own (containment.enter_user_namespace); by default only without root,
        which has no other way to them (root keeps the host's uids, which the uid drop
        needs).

        `preload`: modules the zygote imports once for every child (BATCH_PRELOAD).

        `hold`: a descriptor the zygote keeps open as long as it lives: the lock of its uid
        slot (limits.claim_slot), so that the slot stays taken while any job of it runs."""
        self.run_as: int | None = choose_uid(slot=uid_slot) if run_as == "auto" else run_as
        self._rotate_uid = run_as == "auto"
        self._workdir = tempfile.TemporaryDirectory(prefix="inplace-grader-")
        self.workdir = Path(self._workdir.name)
        # A child that dropped its uid reaches its scratch folder through here: search-only,
        # never listable; everything else in it is the grader's and 0600/0700.
        os.chmod(self.workdir, 0o700 if self.run_as is None else 0o711)
        self._counter = 0
        if user_namespace is None:
            user_namespace = os.geteuid() != 0
        if user_namespace and self.run_as is not None:
            # A user namespace maps only this uid: the drop to another would silently fail.
            raise ValueError("a user namespace and a uid drop cannot both apply: pass run_as=None")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "grader.sandbox.zygote", *labs,
             *(["--user-namespace"] if user_namespace else []),
             *(f"--preload={module}" for module in preload)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(self.workdir / "zygote.log", "wb"),  # noqa: SIM115 - lives with proc
            env=child_environment(),
            cwd=self.workdir,
            text=True,
            pass_fds=() if hold is None else (hold,),
        )
        self._ready = False
        self.peak_mib = 0.0  # the zygote's peak RSS, read as it stops (bench/)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def new_submission_file(self, source: str) -> Path:
        """A fresh folder holding `submission.py` (the name tracebacks are filtered by)."""
        self._counter += 1
        folder = self.workdir / f"submission{self._counter}"
        folder.mkdir(mode=0o700)
        target = folder / "submission.py"
        target.write_text(source, encoding="utf-8")
        target.chmod(0o600)  # the child reads it before it drops its uid
        return target

    def _read_line(self) -> str:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            log = (self.workdir / "zygote.log").read_text(errors="replace")[-2000:]
            raise SandboxError(f"the sandbox worker stopped unexpectedly:\n{log}")
        return line

    def _wait_ready(self) -> float:
        """Seconds waited for the zygote's warm-up (0 once it is ready)."""
        if self._ready:
            return 0.0
        started = time.monotonic()
        self._read_line()
        self._ready = True
        return time.monotonic() - started

    def peak_rss_mib(self) -> float:
        """The zygote's peak resident memory so far (VmHWM; 0 once it has stopped)."""
        try:
            with open(f"/proc/{self._proc.pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except (OSError, ValueError):
            pass
        return 0.0

    def run_job(self, *, lab: str, submission: Path, tasks: list[TaskSpec],
                limits: Limits | None = None, search_path: Path | None = None,
                forbidden_package: str = "") -> JobResult:
        """Run one submission's tasks; observations are loaded as data (wire.py), never run."""
        limits = limits or Limits()
        ready_s = self._wait_ready()
        self._counter += 1
        job_dir = self.workdir / f"job{self._counter}"
        job_dir.mkdir(mode=0o700 if self.run_as is None else 0o711)
        scratch = job_dir / "scratch"
        scratch.mkdir(mode=0o700)
        run_as = (job_uid(self.run_as, self._counter) if self.run_as is not None
                  and self._rotate_uid else self.run_as)
        if run_as is not None:
            if search_path:
                search_path, note = _own_copy(search_path, scratch)
                if note:  # where the student reads their program's output (--debug)
                    fd = os.open(job_dir / "output.log", os.O_WRONLY | os.O_CREAT, 0o600)
                    with os.fdopen(fd, "w") as handle:
                        handle.write(note)
            for path in [scratch, *scratch.rglob("*")]:
                os.lchown(path, run_as, run_as)
        job = Job(
            job_id=str(self._counter),
            lab=lab,
            submission_path=str(submission),
            search_path=str(search_path or ""),
            api_path=str(job_dir / "api.pt"),
            log_path=str(job_dir / "output.log"),
            nonce=secrets.token_hex(16),
            forbidden_package=forbidden_package,
            scratch_path=str(scratch),
            run_as=run_as,
            grader_pid=os.getpid(),
            tasks=[_task(spec, job_dir, index) for index, spec in enumerate(tasks)],
            timeout_s=limits.timeout_s,
            memory_bytes=limits.memory_bytes,
            file_size_bytes=limits.file_size_bytes,
            open_files=limits.open_files,
        )
        assert self._proc.stdin is not None
        sent = time.monotonic()
        self._proc.stdin.write(job.model_dump_json() + "\n")
        self._proc.stdin.flush()
        outcome = JobOutcome.model_validate_json(self._read_line())
        answered = time.monotonic()
        if outcome.job_id != job.job_id:  # children hold no descriptor that could say this
            raise SandboxError(f"the sandbox worker answered for job {outcome.job_id!r} while "
                               f"job {job.job_id!r} ran")
        budget = _Budget()
        api = self._load(job.api_path, job.nonce, budget) if outcome.api_status == "ok" else None
        results = [
            (task_outcome, self._load(task.result_path, job.nonce, budget)
             if task_outcome.status == "ok" else None)
            for task, task_outcome in zip(job.tasks, outcome.tasks, strict=True)
        ]
        from grader.sandbox import witness  # torch: imported where a job runs, not at start

        witnessed = [witness.read(task.witness_path,
                                  witness.layout(spec.cases, partial(spec.witness, spec.function)))
                     if spec.witness and task.witness_path and result is not None else {}
                     for spec, task, (_, result) in zip(tasks, job.tasks, results, strict=True)]
        log = _tail(Path(job.log_path))
        outputs = [_tail(Path(task.output_path)) for task in job.tasks]
        log_bytes = _size_or_zero(Path(job.log_path))
        output_bytes = [_size_or_zero(Path(task.output_path)) for task in job.tasks]
        shutil.rmtree(job_dir, ignore_errors=True)  # read: the disk stays flat over a class
        phases = {**outcome.phases, "ready": ready_s, "wait": answered - sent,
                  "decode": time.monotonic() - answered}
        return JobResult(outcome=outcome, api=api, tasks=results, log=log, witnessed=witnessed,
                         outputs=outputs, log_bytes=log_bytes, output_bytes=output_bytes,
                         phases=phases)

    def discard(self, submission: Path) -> None:
        """Remove a submission file made by `new_submission_file` once it is graded."""
        if submission.parent.parent == self.workdir:
            shutil.rmtree(submission.parent, ignore_errors=True)

    @staticmethod
    def _load(path: str, nonce: str, budget: _Budget) -> dict[str, Any] | None:
        """A record as data, or None: missing, forged, truncated, or over what the grader
        reads. The header's length and its leading nonce are checked before the rest is read,
        so a forged file costs at most its first megabyte."""
        from grader.sandbox.wire import HEADER_LIMIT, WireError, header_length, loads, stamp

        try:
            with open(path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                start = handle.read(8)
                length = header_length(start)
                if length > HEADER_LIMIT:
                    return None
                header = handle.read(length)
                if not header.startswith(stamp(nonce)) or not budget.take(size):
                    return None
                loaded = loads(start + header + handle.read(size - 8 - length))
        except (OSError, WireError):
            return None
        return loaded if isinstance(loaded, dict) and loaded.get("nonce") == nonce else None

    def close(self) -> None:
        """Stop the worker. It holds no state and no children between units, so it is killed
        rather than left to run torch's interpreter teardown (about a second)."""
        self.peak_mib = max(self.peak_mib, self.peak_rss_mib())
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                stream.close()
        self._workdir.cleanup()


def _task(spec: TaskSpec, job_dir: Path, index: int) -> Task:
    task = Task(function=spec.function, device=spec.device, cases=spec.cases,
                result_path=str(job_dir / f"task{index}.pt"),
                output_path=str(job_dir / f"task{index}.log"),
                witness_path=str(job_dir / f"task{index}.witness") if spec.witness else "")
    if not spec.private:
        return task
    path = job_dir / f"task{index}-cases.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # read before the drop
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(spec.cases, handle)
    return task.model_copy(update={"cases": [], "cases_path": str(path)})


OWN_FOLDER_LIMIT = 64 * 1024**2
# Bytes of records the grading process reads per job (honest ones: a few hundred KB; hidden
# cases with large shapes add tensor bytes). A record past it is no result.
JOB_RECORDS_LIMIT = 256 * 1024**2


@dataclass
class _Budget:
    left: int = JOB_RECORDS_LIMIT

    def take(self, size: int) -> bool:
        if size > self.left:
            return False
        self.left -= size
        return True


def _own_copy(folder: Path, scratch: Path) -> tuple[Path, str]:
    """The student's own folder as the child will import from it after the uid drop: as is
    where every uid may read it, else copied into its scratch folder (the copy is theirs to
    change). The copy holds at most 64 MiB: Python files first, then the smallest others.
    Also returns a note naming what was left out, for the student's output log."""
    if readable_by_others(folder):
        return folder, ""
    files = sorted((path for path in folder.rglob("*") if path.is_file() or path.is_symlink()),
                   key=lambda path: (path.suffix != ".py", _size(path), str(path)))
    copied, left_out = 0, []
    for path in files:
        size = _size(path)
        if copied + size > OWN_FOLDER_LIMIT:
            left_out.append(str(path.relative_to(folder)))
            continue
        target = scratch / path.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():
            target.symlink_to(os.readlink(path))
        else:
            shutil.copyfile(path, target)
        copied += size
    if not left_out:
        return scratch, ""
    shown = ", ".join(left_out[:5]) + (f" and {len(left_out) - 5} more" if len(left_out) > 5
                                       else "")
    return scratch, (f"inplace-grader: your folder holds more than "
                     f"{OWN_FOLDER_LIMIT // 1024**2} MiB; the grader copied its Python files "
                     f"and smaller files only, and left out {shown}\n")


def _size_or_zero(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _size(path: Path) -> int:
    return 0 if path.is_symlink() else path.stat().st_size


# Lines the grader's own allocation meter (torch's profiler, Kineto) writes to stderr: not
# the student's output, and a probe runs it often enough to push theirs out of the tail.
_METER_NOISE = re.compile(r"^(USDT|STAGE):\S+ \S+ \d+:\d+ \w*ActivityProfiler\w*\.cpp:\d+\] .*$\n?",
                          re.MULTILINE)


def _tail(path: Path, limit: int = 4000) -> str:
    """The last `limit` characters of what the submission printed, meter noise left out."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 16 * limit))
            text = handle.read().decode(errors="replace")
    except OSError:
        return ""
    return _METER_NOISE.sub("", text)[-limit:]
