"""The terminal report: wrapped at words under its labels on a terminal, unwrapped in a log,
headers in the student's language, and only the failures when asked."""

from __future__ import annotations

import io

from rich.console import Console

from grader.models import CheckResult, Report
from grader.render import progress_bar, render_text, wrap

HINT = ("`p.data = ...` and `p = p - ...` replace the memory; use "
        "`p.add_(p.grad, alpha=-lr)` under `torch.no_grad()`")


def _check(function: str, status: str, **words: str) -> CheckResult:
    return CheckResult(id=f"{function}.same_storage", name=f"{function} keeps its storage",
                       function=function, kind="storage", device="cpu", status=status,
                       passed=status == "passed", score=2.0 if status == "passed" else 0.0,
                       max_score=2.0, **words)


def _report() -> Report:
    failed = _check("sgd_step", "failed", message="sgd_step: `params[0]` now points to "
                    "different memory", expected="the same storage, updated in place",
                    got="a new storage", hint=HINT)
    return Report(lab="optim", score=2.0, max_score=4.0, checks=[_check("zero_grad", "passed"),
                  failed], grader_version="0", torch_version="0", elapsed_s=0.1)


def _rendered(*, terminal: bool, width: int = 60, **options: object) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=terminal, color_system=None,
                      highlight=False)
    render_text(_report(), console, lang=options.pop("lang", "en"), **options)  # type: ignore[arg-type]
    return out.getvalue()


def test_on_a_terminal_lines_wrap_at_words_under_the_value_never_inside_code() -> None:
    text = _rendered(terminal=True, width=60)
    hint = text[text.index("    hint:"):].split("\n\n")[0].splitlines()
    assert len(hint) > 1 and all(len(line) <= 60 for line in hint)
    indent = len("    expected: ")
    assert all(line.startswith(" " * indent) and line[indent] != " " for line in hint[1:])
    joined = " ".join(line.strip() for line in hint)
    for span in ("`p.data = ...`", "`p = p - ...`", "`p.add_(p.grad, alpha=-lr)`",
                 "`torch.no_grad()`"):
        assert span in joined  # each span whole on one line


def test_in_a_log_the_explanations_are_not_wrapped() -> None:
    text = _rendered(terminal=False, width=60)
    assert f"    hint:     {HINT}\n" in text


def test_wrap_keeps_a_code_span_longer_than_the_line_whole() -> None:
    assert wrap("use `a very long code span` now", width=10) == [
        "use", "`a very long code span`", "now"]
    assert wrap("two\nlines", width=40) == ["two", "lines"]


def test_headers_are_in_the_students_language() -> None:
    header = _rendered(terminal=False, width=100, lang="ko").splitlines()[0]
    assert "장치" in header and "device" not in header


def test_failed_only_lists_failures_and_a_line_per_passing_function() -> None:
    text = _rendered(terminal=False, width=100, failed_only=True)
    assert "zero_grad keeps its storage" not in text
    assert "✓ zero_grad: all 1 checks passed (2/2)" in text
    assert "sgd_step keeps its storage" in text


def test_the_progress_bar_names_students_whole_and_ends_saying_graded() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=False)
    report = _report()
    with progress_bar(console) as bar:
        bar.start(2)
        bar.advance("maria-fernanda.de-la-cruz-gonzalez", report, False)
        bar.advance("ines", report, False)
    last = out.getvalue().strip().splitlines()[-1]
    assert last.startswith("graded") and "2/2" in last and "ines" not in last


def test_a_check_waiting_on_another_is_shown_waiting_naming_it() -> None:
    """Issue 30: a check that holds but counts once another passes (`not_shown`) is not a
    mistake: ⧗, not ✗, and the words say what it waits on; its points stay 0."""
    waiting = [CheckResult(id=f"relu_.{name}", name=f"relu_ {name}", function="relu_",
                           kind="storage", device="cpu", status="failed", passed=False,
                           score=0.0, max_score=2.0, waits_on=["relu_.values"],
                           message="waiting for “relu_ computes relu” to pass: this check "
                           "counts from then on") for name in ("same_storage", "is_x")]
    values = CheckResult(id="relu_.values", name="relu_ computes relu", function="relu_",
                         kind="numerics", device="cpu", status="failed", passed=False,
                         score=0.0, max_score=2.0, message="relu_: wrong values")
    report = Report(lab="tensor_ops", score=0.0, max_score=6.0, checks=[values, *waiting],
                    grader_version="0", torch_version="0", elapsed_s=0.1)
    out = io.StringIO()
    render_text(report, Console(file=out, width=200, color_system=None, highlight=False),
                lang="en")
    rows = out.getvalue().splitlines()
    same = next(line for line in rows if "relu_ same_storage" in line)
    assert same.lstrip().startswith("⧗") and "0/2" in same
    assert next(line for line in rows if "relu_ computes relu" in line).lstrip()[0] == "✗"
    assert ("⧗ waiting for “relu_ computes relu” to pass: this check counts from then on "
            "(2 checks waiting)") in rows
    assert "1 of 3 checks failed; 2 more wait on another check to pass." in rows
    assert "✗ relu_: wrong values" in rows
    assert report.return_code == 1  # nothing earned yet
    from grader.exporters.text import feedback_text
    text = feedback_text(report, lang="en")
    assert "⧗     0/2  relu_ same_storage [cpu]" in text
    assert "(2 checks waiting)" in text


def test_the_screen_starts_with_failures_and_folds_a_stub_into_one_line() -> None:
    """Issue 30: failures first, grouped by function; a function whose checks mostly fail
    for one reason (a stub) is one line with the count and the points."""
    passed = _check("zero_grad", "passed")
    stub = [CheckResult(id=f"relu_.c{n}", name=f"relu_ check {n}", function="relu_",
                        kind="storage", device="cpu", status="failed", passed=False,
                        score=0.0, max_score=1.0 if n % 2 else 2.0,
                        message="relu_ is not implemented yet") for n in range(7)]
    own = _check("sgd_step", "failed", message="sgd_step: `params[0]` now points to "
                 "different memory")
    report = Report(lab="optim", score=2.0, max_score=15.0, checks=[passed, *stub, own],
                    grader_version="0", torch_version="0", elapsed_s=0.1)
    out = io.StringIO()
    render_text(report, Console(file=out, width=200, color_system=None, highlight=False),
                lang="en")
    table = out.getvalue().split("\n\n")[0].splitlines()[1:]
    assert [line.split()[0] for line in table] == ["✗", "✗", "✓"], table
    assert "relu_ is not implemented yet (7 checks)" in table[0]
    assert table[0].rstrip().endswith("0/11")
    assert "sgd_step keeps its storage" in table[1]
    assert "zero_grad keeps its storage" in table[2]
    assert not any("relu_ check" in line for line in table)
