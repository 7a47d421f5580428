"""Step 3: the scored rows in the student's words, once, at the end: the only place the
engine calls the catalog (grader/feedback.py), so a wording change never touches scoring."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from grader import feedback
from grader.checks.findings import Finding, Phrase
from grader.engine.observe import Observed
from grader.engine.outcomes import limit_mib, printed_too_much
from grader.engine.scoring import Scored
from grader.labs.base import Lab
from grader.labs.reproducers import (
    Assert,
    Close,
    Comment,
    Line,
    Raise,
    Reproducer,
    Runtime,
)
from grader.models import CheckResult, Limits, Printed


def worded(rows: list[Scored], lab: Lab, lang: str, *,
           reproducers: dict[tuple[str, str], Reproducer] | None = None,
           notebook: bool = False) -> list[CheckResult]:
    """The rows in `lang`; each failed row with a reproducer (engine/reproduce.py) carries it
    as code, for a file beside the student's (`notebook`: for a cell of their notebook)."""
    found = reproducers or {}
    return [worded_row(row, lab, lang, reproducer=found.get((row.id, row.device)),
                       notebook=notebook) for row in rows]


def worded_row(row: Scored, lab: Lab, lang: str, *, reproducer: Reproducer | None = None,
               notebook: bool = False) -> CheckResult:
    """One row as the report shows it: its name, and for a failure what was expected, what
    happened and a hint, with the cases it names described in words."""
    name = title(row, lang)
    common: dict[str, Any] = dict(id=row.id, name=name, function=row.function, kind=row.kind,
                                  device=row.device, hidden=row.hidden, flagged=row.flagged)
    if row.skipped:
        message = feedback.word(row.finding, lang).message
        return CheckResult(**common, status="skipped", passed=None, score=0.0,
                           max_score=row.max_score, message=message)
    if row.finding.passed:
        return CheckResult(**common, status="passed", passed=True, score=row.score,
                           max_score=row.max_score, debug=row.finding.debug)
    wording = feedback.word(named_cases(row.finding, lab, row.function, lang), lang,
                            lab=lab.name)
    message, hint = wording.message, wording.hint
    if row.blame is not None:  # the callee at fault: its message and hint, this row's values
        blamed = feedback.word(row.blame, lang)
        message, hint = blamed.message, blamed.hint
    if row.check == "runtime":
        message = message.replace("{function}", row.function)
    debug = "\n".join(part for part in (row.finding.debug, row.log) if part)
    code = "" if reproducer is None else reproducer_text(reproducer, check_id=row.id, lab=lab,
                                                           lang=lang, notebook=notebook)
    return CheckResult(**common, status="failed", passed=False, score=row.score,
                       max_score=row.max_score, message=message, expected=wording.expected,
                       got=wording.got, hint=hint, debug=debug, reproducer=code,
                       waits_on=list(row.waits_on))


def reproducer_text(reproducer: Reproducer, *, check_id: str, lab: Lab, lang: str,
                    notebook: bool = False) -> str:
    """`_reproducer_text`, or "" where writing it fails: a reproducer is an aid, never the
    reason a report is not written."""
    try:
        return _reproducer_text(reproducer, check_id=check_id, lab=lab, lang=lang,
                                notebook=notebook)
    except Exception:
        return ""


def _reproducer_text(reproducer: Reproducer, *, check_id: str, lab: Lab, lang: str,
                     notebook: bool = False) -> str:
    """A reproducer as the student runs it: a comment saying what it shows and where to run
    it, the imports (none in a notebook, whose kernel defines the functions), then its lines,
    each assertion's message in `lang` (docs/semantics.md#reproducers)."""
    header = feedback.reproducer_words("header_notebook" if notebook else "header", lang,
                                       check=feedback.check_name(check_id, lang), id=check_id,
                                       file=lab.filename)
    body = [_code(line, lang) for line in reproducer.lines]
    # Imports a builder wrote where it needed them go to the top, each once.
    imports = [line for line in body if line.startswith(("import ", "from "))]
    lines = [f"# {header}", *dict.fromkeys(["import torch", *imports])]
    if not notebook:
        lines.append(f"from {Path(lab.filename).stem} import {', '.join(reproducer.names)}")
    lines.append("")
    if any(isinstance(line, Close) for line in reproducer.lines):
        # See docs/semantics.md#numerics-tolerances: the child fills new memory with NaN.
        lines += [f"# {feedback.reproducer_words('deterministic', lang)}",
                  "torch.use_deterministic_algorithms(True, warn_only=True)"]
    for line in body:
        if line not in imports and not (line == "" and lines[-1] == ""):
            lines.append(line)
    return "\n".join(lines).rstrip() + "\n"


def _code(line: Line, lang: str) -> str:
    if isinstance(line, str):
        return line
    pad = "    " * line.indent
    if isinstance(line, Comment):
        return f"{pad}# {feedback.reproducer_words(line.key, lang, **line.params)}"
    message = _message_literal(line.key, line.params, lang)
    if isinstance(line, Assert):
        return f"{pad}assert {line.condition}, {message}"
    if isinstance(line, Raise):
        return f"{pad}raise AssertionError({message}) from {line.cause}"
    assert isinstance(line, Close)
    rtol, atol = line.tolerance
    return (f"{pad}torch.testing.assert_close({line.actual}, {line.expected}, rtol={rtol}, "
            f"atol={atol}, equal_nan=True, check_dtype=False,\n"
            f"{pad}                           msg=lambda numbers: {message} + \"\\n\" + numbers)")


def _message_literal(key: str, params: dict[str, Any], lang: str) -> str:
    """The message of an assertion as a Python string literal; an f-string where a value is
    known only at run time (`Runtime`)."""
    late = {name: value.around.replace("{}", "{" + value.expression + "}")
            for name, value in params.items() if isinstance(value, Runtime)}
    tokens = {name: f"\x00{index}\x00" for index, name in enumerate(late)}
    text = feedback.reproducer_words(key, lang, **{**params, **tokens})
    if not late:
        return repr(text)
    literal = repr(text.replace("{", "{{").replace("}", "}}"))
    for name, token in tokens.items():
        literal = literal.replace(repr(token)[1:-1], late[name])
    return "f" + literal


def title(row: Scored, lang: str) -> str:
    """A row's name: its check's, a runtime row's for its function, and for a hidden row the
    check's name with the hidden case it graded."""
    if row.check == "runtime":
        name = feedback.check_name("runtime", lang, function=row.function)
        return feedback.ui("hidden_runtime", lang, check=name) if row.hidden else name
    name = feedback.check_name(row.check, lang)
    return feedback.ui("hidden_case", lang, check=name, case=row.case) if row.case else name


def named_cases(finding: Finding, lab: Lab, function: str, lang: str) -> Finding:
    """The finding with each case id it names (`case=`, in its phrases too) replaced by the
    case in words (Lab.describe_case): "3 float32 parameters, one with no gradient", not
    `mixed`. An id that is not one of the lab's cases (a hidden case's own name) stays; a
    finding without a `function` gets the row's."""
    cases = {case["id"]: case for case in lab.cases(function)}

    def words(params: dict[str, Any]) -> dict[str, Any]:
        named = {}
        for key, value in params.items():
            if isinstance(value, Phrase):
                value = Phrase(value.key, words(value.params))
            elif key == "location" and isinstance(value, str) and (
                    line := re.fullmatch(r"line (\d+)\s*(.*)", value, re.DOTALL)):
                # See grader/sandbox/exceptions.py: "line 12 (source)", in the reader's words.
                value = Phrase("at_line", {"line": line[1], "code": line[2]})
            elif key == "case" and isinstance(value, str) and value in cases:
                described = [feedback.fill_phrase(p, lang)
                             for p in lab.describe_case(cases[value])]
                value = ", ".join(described) or value
            named[key] = value
        return named

    # Every message names its function: a finding built without one (a shared value check)
    # gets its row's.
    params = {**finding.params, "function": finding.params.get("function") or function}
    return Finding(finding.passed, finding.key, words(params), finding.debug)


def printed_output(observed: Observed, *, limits: Limits, lang: str) -> list[Printed]:
    """What the code printed (--debug), at import and per task; output cut at the file size
    limit ends with a line that says so, never mid-line (issue 30)."""
    job = observed.job

    def told(text: str, printed_bytes: int) -> str:
        if not printed_too_much(printed_bytes, limits):
            return text
        cut = feedback.ui("output_cut", lang, limit=limit_mib(limits))
        return f"{text}\n{cut}\n" if text and not text.endswith("\n") else f"{text}{cut}\n"

    printed = [Printed(text=told(job.log, job.log_bytes))] if job.log.strip() else []
    sizes = job.output_bytes or [0] * len(job.outputs)
    printed += [Printed(function=task.function, device=task.device,  # type: ignore[arg-type]
                        text=told(text, size))
                for task, text, size in zip(observed.visible, job.outputs, sizes, strict=False)
                if text.strip()]
    return printed
