"""Student stubs from reference solutions: solutions/ is the single source.

A region between `### BEGIN SOLUTION` and `### END SOLUTION` (as nbgrader marks them) becomes
`raise NotImplementedError` at the region's indentation; everything else (signatures, teaching
docstrings, imports) is kept as written.
"""

from __future__ import annotations

from pathlib import Path

from grader.errors import UsageError

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
PLACEHOLDER = ("# YOUR CODE HERE", "raise NotImplementedError")


class StubError(UsageError):
    """Unbalanced solution markers: names the file and line."""


def make_stub(source: str, *, name: str = "<source>") -> str:
    out: list[str] = []
    begin_line: int | None = None
    for number, line in enumerate(source.splitlines(keepends=True), start=1):
        marker = line.strip()
        if marker == BEGIN:
            if begin_line is not None:
                raise StubError(f"{name}:{number}: {BEGIN} inside another region "
                                f"(opened at line {begin_line})")
            begin_line = number
            indent = line[: len(line) - len(line.lstrip())]
            out += [f"{indent}{text}\n" for text in PLACEHOLDER]
        elif marker == END:
            if begin_line is None:
                raise StubError(f"{name}:{number}: {END} without {BEGIN}")
            begin_line = None
        elif begin_line is None:
            out.append(line)
    if begin_line is not None:
        raise StubError(f"{name}:{begin_line}: {BEGIN} is never closed")
    return "".join(out)


def strip_markers(source: str) -> str:
    """The solution as students would run it: markers removed, code kept."""
    return "".join(line for line in source.splitlines(keepends=True)
                   if line.strip() not in (BEGIN, END))


def sync_stubs(solutions: Path, assignments: Path, *, write: bool) -> list[Path]:
    """Stubs that differ from their solutions; written when `write` is set."""
    changed = []
    for solution in sorted(solutions.glob("*/*.py")):
        target = assignments / solution.relative_to(solutions)
        stub = make_stub(solution.read_text(encoding="utf-8"), name=str(solution))
        if not target.exists() or target.read_text(encoding="utf-8") != stub:
            changed.append(target)
            if write:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(stub, encoding="utf-8")
    return changed
