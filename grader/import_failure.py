"""A file that did not import, told once and in the student's own terms.

The child imports a copy of the submission (`…/submission1/submission.py`) and, for a notebook,
the code cells joined into one module; so what it reports (the exception's line, its
traceback) is translated here into the student's file name, and for a notebook into the cell
and the line within it. A module missing where the grader runs (`import matplotlib`) is told
apart from a bug: the code may be right, and the student needs to know what to do about it.
"""

from __future__ import annotations

import re
from typing import Any

from grader import feedback
from grader.checks.findings import Finding, fail
from grader.models import ImportFailure
from grader.submission import Submission

# The child's copy of the file, as it appears in tracebacks and messages.
_SCRATCH_COPY = re.compile(r"""[^\s"'()]*/submission\d*/submission\.py""")


_TRACEBACK_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def own_names(text: str, filename: str) -> str:
    """`text` with the grader's scratch copy of the file renamed to the student's file."""
    return _SCRATCH_COPY.sub(filename, text)


def own_traceback(text: str, submission: Submission) -> str:
    """A traceback in the student's file name; a notebook's lines as cell and line."""
    text = own_names(text, submission.path.name)

    def in_cell(match: re.Match[str]) -> str:
        cell = submission.cell_of(int(match["line"])) if match["file"] == submission.path.name \
            else None
        return match[0] if cell is None else f'File "{match["file"]}", cell {cell[0]}, line ' \
            f"{cell[1]}"

    return _TRACEBACK_LINE.sub(in_cell, text)


_LOCATION = re.compile(r"line (?P<line>\d+)")


def own_finding(finding: Finding, submission: Submission) -> Finding:
    """A finding from a call that raised (engine/scoring.py) in the student's own terms: its
    traceback in their file name, and for a notebook its `location` ("line 64 (code)", the
    line of the joined cells) as "cell 4, line 2 (code)", as an import failure is told."""
    if finding.passed:
        return finding
    params = finding.params
    where = params.get("location")
    match = _LOCATION.match(where) if isinstance(where, str) else None
    cell = submission.cell_of(int(match["line"])) if match else None
    if match and cell is not None and isinstance(where, str):
        params = {**params, "location": _place(None, cell) + where[match.end():]}
    debug = own_traceback(finding.debug, submission) if finding.debug else ""
    if params is finding.params and debug == finding.debug:
        return finding
    return Finding(False, finding.key, params, debug)


def _place(line: int | None, cell: tuple[int, int] | None) -> str:
    """"line 60", or a notebook's "cell 4, line 2"; "" where the line is unknown."""
    if cell is not None:
        return f"cell {cell[0]}, line {cell[1]}"
    return f"line {line}" if line else ""


def location(submission: Submission, line: int | None, code: str) -> str:
    """Where in the student's file: "line 60: `def f(x)`", or for a notebook "cell 4, line 2:
    `import matplotlib`"; "" where the line is unknown."""
    if line is None:
        return ""
    place = _place(line, submission.cell_of(line))
    return f"{place}: `{code}`" if code else place


def import_finding(error: dict[str, Any], submission: Submission) -> Finding:
    """The finding for an exception raised while the file imported (the child's record)."""
    filename = submission.path.name
    module = str(error.get("module") or "") if error.get("type") == "ModuleNotFoundError" else ""
    key = ("import_missing_module" if module
           else "import_error_notebook" if submission.path.suffix == ".ipynb"
           else "import_error")
    where = location(submission, error.get("line"), str(error.get("code") or ""))
    return fail(key, debug=own_traceback(str(error.get("traceback", "")), submission),
                error_type=error["type"], error=own_names(error["message"], filename),
                location=where or "import", filename=filename, module=module)


def import_failure(problem: Finding, submission: Submission, record: dict[str, Any] | None,
                   *, lang: str) -> ImportFailure:
    """The report's one block for a file that did not import: why (worded as `problem`),
    where (from the child's record, when the import raised) and, for --debug, the traceback
    (what the import printed is the report's `output`)."""
    raised = problem.key in ("import_error", "import_error_notebook", "import_missing_module")
    error = (record or {}).get("import_error") or {} if raised else {}
    line = error.get("line") if isinstance(error.get("line"), int) else None
    cell = submission.cell_of(line) if line is not None else None
    wording = feedback.word(problem, lang)
    return ImportFailure(
        file=submission.path.name,
        error_type=str(error.get("type") or problem.key.removeprefix("import_")),
        error=own_names(str(error.get("message") or ""), submission.path.name),
        line=line, cell=cell[0] if cell else None, cell_line=cell[1] if cell else None,
        code=str(error.get("code") or ""), missing_module=str(problem.params.get("module", "")),
        message=wording.message, expected=wording.expected, got=wording.got, hint=wording.hint,
        debug=problem.debug,
    )


# What the child's audit hook and tamper watch said during the import: the file imported,
# and what it did there is each function's verdict (engine/outcomes.py integrity_finding),
# not an error.
INTEGRITY_KEYS = frozenset({"integrity", "tampered", "tensor_subclass"})


def tampered(problem: Finding) -> bool:
    return problem.key in INTEGRITY_KEYS


# Findings at run time that an instructor should review, beyond the check they fail: the
# above, a record that does not fit its case or disagrees with the caller's memory read from
# outside, and a call whose peak seen from outside the process contradicts the meters inside.
FLAGGED_KEYS = INTEGRITY_KEYS | {"altered_record", "witness_disagrees", "metered_differently"}


def import_line(failure: ImportFailure) -> str:
    """The import failure in one line (a gradebook cell, a log line)."""
    cell = (failure.cell, failure.cell_line) if failure.cell and failure.cell_line else None
    where = _place(failure.line, cell)
    head = f"{failure.error_type} at {where}" if where else failure.error_type
    return f"{head}: {failure.error}" if failure.error else head


def not_imported(function: str, submission: Submission) -> Finding:
    """What each function's row says: not graded, without repeating the error."""
    return fail("not_imported", function=function, filename=submission.path.name)
