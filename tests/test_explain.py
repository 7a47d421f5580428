"""`check --explain CHECK_ID` (grader/explain.py): which row it shows, and the usage errors
told before anything is graded."""

from __future__ import annotations

import pytest

from tests.conftest import SOLUTION, failed_row, grader_cli, report_of


def test_explain_names_the_failed_row_and_refuses_the_rest() -> None:
    from grader.errors import UsageError
    from grader.explain import failed_check, known_check

    report = report_of(failed_row(device="cuda", reproducer="# cuda"),
                       failed_row(reproducer="# cpu"),
                       failed_row("sgd_step.values", status="passed"),
                       failed_row("sgd_step.version_advances", hidden=True))
    assert failed_check(report, "sgd_step.same_storage").reproducer == "# cpu"
    with pytest.raises(UsageError, match="passed"):
        failed_check(report, "sgd_step.values")
    with pytest.raises(UsageError, match="withheld"):
        failed_check(report, "sgd_step.version_advances")
    with pytest.raises(UsageError, match=r"did you mean sgd_step\.same_storage"):
        known_check("optim", "sgd_step.same_storag")
    with pytest.raises(UsageError, match="hidden case"):
        known_check("optim", "sgd_step.values@big")


@pytest.mark.parametrize(("args", "message"), [
    (["--explain", "sgd_step.sam_storage"], "did you mean sgd_step.same_storage"),
    (["--explain", "sgd_step.values", "--format", "json"], "takes no --format"),
    (["--explain", "sgd_step.values", "--watch"], "takes no --watch"),
])
def test_explain_usage_errors_are_one_line_before_grading(args: list[str], message: str) -> None:
    done = grader_cli("check", str(SOLUTION), *args)
    assert done.returncode == 2 and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not done.stdout
