"""An exception of the submission's as plain data: what crosses from the child to the grading
process. Torch-free, so that the grading process words a file that does not even parse the
same way, without starting a child (grader/quick_answers.py).
"""

from __future__ import annotations

import os
import traceback
from typing import Any


def describe_exception(exc: BaseException) -> dict[str, Any]:
    """An exception as plain data, with the traceback limited to the submission's frames.
    `line` and `code` are where in the submission it was raised (for a SyntaxError, the
    line that does not parse), so that the grading process can name the student's own file,
    or a notebook's cell, instead of this child's copy."""
    frames = traceback.extract_tb(exc.__traceback__)
    student = [f for f in frames if f.filename.endswith(os.sep + "submission.py")]
    location, line, code = "", None, ""
    message = str(exc).splitlines()[0][:500] if str(exc) else ""
    if isinstance(exc, SyntaxError) and str(exc.filename or "").endswith(
            os.sep + "submission.py") and isinstance(exc.lineno, int):
        line, code = exc.lineno, str(exc.text or "").strip()
        location = f"line {exc.lineno}"
        message = str(exc.msg or message)[:500]  # without "(submission.py, line N)"
    elif student:
        line, code = student[-1].lineno, (student[-1].line or "").strip()
        location = f"line {line} ({code})".strip()
    return {
        "type": type(exc).__name__,
        "bases": [cls.__name__ for cls in type(exc).__mro__],
        "message": message,
        "location": location,
        "line": line if isinstance(line, int) else None,
        "code": code[:200],
        "module": str(exc.name or "") if isinstance(exc, ImportError) else "",
        "traceback": _student_traceback(exc, frames)[-4000:],
    }


def _student_traceback(exc: BaseException, frames: traceback.StackSummary) -> str:
    """The traceback from the submission's first frame on: the grader's own frames above it
    (the probe that called the function, the import machinery) tell the student nothing."""
    first = next((index for index, frame in enumerate(frames)
                  if frame.filename.endswith(os.sep + "submission.py")),
                 len(frames) if isinstance(exc, SyntaxError) else 0)  # its line is shown below
    described = traceback.TracebackException.from_exception(exc)
    described.stack = traceback.StackSummary.from_list(list(described.stack)[first:])
    return "".join(described.format())
