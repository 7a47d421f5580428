"""The grading process's side of the sandbox: start the zygote, send units, read results."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

from grader.models import Limits
from grader.sandbox.protocol import Unit, UnitOutcome

# Variables the child must not inherit or must have: one thread per child (fork + OpenMP
# hazard, reproducible fp32 sums), a small malloc arena count (RLIMIT_AS headroom), NVML-based
# CUDA detection so nothing in the zygote initialises CUDA.
_CHILD_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "MALLOC_ARENA_MAX": "2",
    "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
}
_KEEP_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "VIRTUAL_ENV", "CUDA_VISIBLE_DEVICES",
             "LD_LIBRARY_PATH", "TMPDIR")


class SandboxError(RuntimeError):
    """The zygote itself failed (not the submission): an internal error."""


def child_environment() -> dict[str, str]:
    env = {key: os.environ[key] for key in _KEEP_ENV if key in os.environ}
    env.update(_CHILD_ENV)
    return env


class Sandbox:
    """A zygote process plus a private work folder; use as a context manager.

    `run(...)` sends one unit, waits for its outcome, and loads the observations the child
    wrote (tensors and plain data only: `weights_only=True` never runs code).
    """

    protections = ("separate process", "process group kill", "child subreaper", "rlimits")

    def __init__(self, labs: list[str]) -> None:
        self._workdir = tempfile.TemporaryDirectory(prefix="inplace-grader-")
        self.workdir = Path(self._workdir.name)
        os.chmod(self.workdir, 0o700)
        self._counter = 0
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "grader.sandbox.zygote", *labs],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(self.workdir / "zygote.log", "wb"),  # noqa: SIM115 - lives with proc
            env=child_environment(),
            cwd=self.workdir,
            text=True,
        )
        self._ready = False

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
        folder.mkdir(mode=0o755)
        target = folder / "submission.py"
        target.write_text(source, encoding="utf-8")
        target.chmod(0o644)
        return target

    def _read_line(self) -> str:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            log = (self.workdir / "zygote.log").read_text(errors="replace")[-2000:]
            raise SandboxError(f"the sandbox worker stopped unexpectedly:\n{log}")
        return line

    def _wait_ready(self) -> None:
        if not self._ready:
            self._read_line()
            self._ready = True

    def run(
        self,
        *,
        lab: str,
        function: str,
        submission: Path,
        device: str = "cpu",
        cases: list[dict[str, Any]] | None = None,
        limits: Limits | None = None,
    ) -> tuple[UnitOutcome, dict[str, Any] | None, str]:
        """Run one unit; return its outcome, the child's record (None if none) and its log."""
        import torch

        limits = limits or Limits()
        self._wait_ready()
        self._counter += 1
        unit_dir = self.workdir / f"unit{self._counter}"
        unit_dir.mkdir(mode=0o700)
        unit = Unit(
            unit_id=f"{self._counter}-{function}-{device}",
            lab=lab,
            function=function,
            device=device,
            submission_path=str(submission),
            result_path=str(unit_dir / "result.pt"),
            log_path=str(unit_dir / "output.log"),
            nonce=secrets.token_hex(16),
            cases=cases or [],
            timeout_s=limits.timeout_s,
            memory_bytes=limits.memory_bytes,
            file_size_bytes=limits.file_size_bytes,
            open_files=limits.open_files,
        )
        assert self._proc.stdin is not None
        self._proc.stdin.write(unit.model_dump_json() + "\n")
        self._proc.stdin.flush()
        outcome = UnitOutcome.model_validate_json(self._read_line())
        log = _tail(Path(unit.log_path))
        record = None
        if outcome.status == "ok":
            try:
                loaded = torch.load(unit.result_path, weights_only=True, map_location="cpu")
            except Exception:  # a forged or truncated file is no result
                loaded = None
            if isinstance(loaded, dict) and loaded.get("nonce") == unit.nonce:
                record = loaded
            else:
                outcome = outcome.model_copy(update={"status": "no_result"})
        return outcome, record, log

    def close(self) -> None:
        """Stop the worker. It holds no state and no children between units, so it is killed
        rather than left to run torch's interpreter teardown (about a second)."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                stream.close()
        self._workdir.cleanup()


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            return handle.read().decode(errors="replace")
    except OSError:
        return ""
