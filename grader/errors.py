"""How a command ends: the exit codes, and the one kind of error that is the user's.

Every module's bad-input error (an unknown lab, an unreadable file, a typo in a rubric or a
hidden-cases file, a roster that does not parse, ...) derives from `UsageError`, so that the
command line maps them all to one line on stderr and exit code 2 in one place (cli.py).
Nothing here imports torch: usage errors are found before it is loaded.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """How a command ends: 0 every check passed, 1 a check failed, 2 a usage error
    (docs/semantics.md#the-report-and-exit-codes)."""

    OK = 0
    FAILED = 1  # a check failed (check), or `stubs --check` found a difference
    USAGE = 2  # bad input, or nothing to grade: one line on stderr
    INTERNAL = 3  # the grader's own failure ("please report it")
    INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, as shells report it


class UsageError(ValueError):
    """Bad input from the user: one line, exit code 2."""
