"""Exceptions raised by student code, as findings: not implemented, autograd's error, other."""

from __future__ import annotations

import re
from typing import Any

from grader.checks.findings import Finding, fail

# Autograd's in-place errors are plain RuntimeErrors; the message is the only way to tell them
# apart (docs/semantics.md#autograd-in-place-errors). Which one it is decides the feedback:
# why, and how to fix it.
_AUTOGRAD_KINDS = (
    ("autograd_leaf_error",
     re.compile(r"leaf Variable that requires grad is being used in an in-place operation")),
    ("autograd_saved_error", re.compile(
        r"modified by an inplace operation: \[(?P<tensor>[\w.]+ \[[^\]]*\])\]"
        r"(?:, which is output (?P<output>\d+) of (?P<node>\w+))?")),
    ("autograd_view_error", re.compile(r"is being modified inplace")),
    ("autograd_inplace_error", re.compile(r"Inplace update to inference tensor")),
)


def error_finding(error: dict[str, Any], *, function: str, case_id: str) -> Finding:
    """A finding for a function that raised: not implemented, autograd's error, or other."""
    debug = error.get("traceback", "")
    if error["type"] == "NotImplementedError":
        return fail("not_implemented", debug=debug, function=function)
    if error["type"] == "RuntimeError":
        for key, pattern in _AUTOGRAD_KINDS:
            match = pattern.search(error["message"])
            if match:
                details = {k: v for k, v in match.groupdict().items() if v is not None}
                if key == "autograd_saved_error" and "node" not in details:
                    key = "autograd_saved_input_error"  # an input, not an op's output
                return fail(key, debug=debug, function=function, error=error["message"],
                            location=error.get("location", ""), **details)
    return fail("raised", debug=debug, function=function, case=case_id, error_type=error["type"],
                error=error["message"], location=error.get("location", ""))
