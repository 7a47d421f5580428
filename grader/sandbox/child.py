"""What a forked child does: limits, then the submission, then the lab's probes.

Everything here runs in the child process, next to untrusted code. It only observes and writes
raw observations; it never decides a score.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import Any

from grader.sandbox.limits import apply_rlimits
from grader.sandbox.protocol import IMPORT_UNIT, Unit

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


def import_submission(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(SUBMISSION_MODULE, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[SUBMISSION_MODULE] = module
    spec.loader.exec_module(module)
    return module


def redirect_output(log_path: str) -> None:
    """Student prints go to a log file, never to the grader's protocol pipe."""
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    null_fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null_fd, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    os.close(null_fd)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the fds outlive this function
    sys.stdout = open(1, "w", closefd=False, buffering=1)  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115


def run_unit(unit: Unit) -> dict[str, Any]:
    """Import the submission and probe one function; exceptions become observations."""
    import torch

    torch.set_num_threads(1)  # a forked child must not join the parent's OpenMP pool
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    lab_probes = importlib.import_module(f"grader.labs.{unit.lab}.probes")
    record: dict[str, Any] = {"nonce": unit.nonce, "unit_id": unit.unit_id}
    record["limits"] = apply_rlimits(unit)
    lab_probes.prepare()
    try:
        module = import_submission(unit.submission_path)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt at import count too
        record["import_error"] = describe_exception(exc)
        return record
    if unit.function == IMPORT_UNIT:
        record["api"] = lab_probes.describe_api(module)
    else:
        record["observations"] = lab_probes.probe(
            module, unit.function, device=unit.device, cases=unit.cases
        )
    return record


def child_main(unit: Unit) -> None:
    """Entry point right after fork; always ends with os._exit."""
    code = 1
    try:
        os.setsid()
        redirect_output(unit.log_path)
        record = run_unit(unit)
        import torch

        tmp_path = unit.result_path + ".tmp"
        torch.save(record, tmp_path)
        os.replace(tmp_path, unit.result_path)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)
