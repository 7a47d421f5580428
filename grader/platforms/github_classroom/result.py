"""GitHub Classroom: the runner result the autograding reporter reads.

The contract, from classroom-resources' sources: a runner step (autograding-command-grader,
autograding-io-grader: src/main.js) sets its output `result` to base64 of the JSON
`{version: 1, status: "pass"|"fail"|"error", max_score, tests: [{name, status, score, message,
test_code, filename, line_no, duration}]}`. The reporter (autograding-grading-reporter:
src/main.js) reads `runners: a,b` and, for each id, the environment variable
`<ID upper-cased>_RESULTS`, base64-decodes and parses it. What GitHub Classroom records is the
"Points X/Y" notice of src/notify-classroom.js: X adds up every test's `score`, Y every runner's
`max_score`; a runner whose `max_score` is 0 counts for nothing. It fails the job when a
runner's status is "fail" or "error".

So the format knows no per-test maximum. Each check is one test whose `score` is the points it
earned (the tests' scores add up to the report's score) and whose name carries its points,
`name [cpu] (1/2)`; the runner's `max_score` is the report's maximum. The log's table
(src/aggregate-results.js, src/helpers/test-helpers.js) shows instead the share of passing tests
times `max_score`; with checks worth different points that line differs from the grade.

The reporter's log prints a failed test's name and its `test_code`, never its `message`
(src/console-results.js), and an errored test's `message`: a failed check's labelled details
go in `message` and again in `test_code`, where a student reads them. A `runtime` check (the
code crashed or hung) is an "error" test; a report that could not be graded is one "error"
test with the maximum it could have had; a file that did not import adds one "error" test
naming the file, the line and the code there. Hidden checks are left out unless released.

`check --format github-classroom` prints the JSON itself, like every other platform's format;
the workflow's step encodes it (`base64 -w0`) into `result=...` on `$GITHUB_OUTPUT`, as the
Python grader's bin/run.sh does with `jq -sRr @base64`. Printing JSON keeps the output
readable and testable, and the encoding inside `echo "result=$(...)"` leaves the step green
when checks fail (exit code 1), so that the reporter still runs and fails the job itself.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

from grader import feedback
from grader.exporters.text import check_details
from grader.models import CheckResult, ImportFailure, Report
from grader.views import STUDENT, View

VERSION = 1  # the command and IO graders' `version`


def _points(value: float) -> int | float:
    """Whole points as integers (the reporter prints them as they are: `Points 84/90`)."""
    return int(value) if float(value).is_integer() else value


def _test(name: str, status: str, *, score: float = 0.0, message: str = "",
          test_code: str = "", filename: str = "", line_no: int = 0) -> dict[str, Any]:
    """One test in the runners' shape; `duration` is not measured per check."""
    return {"name": name, "status": status, "score": _points(score), "message": message,
            "test_code": test_code, "filename": filename, "line_no": line_no, "duration": 0}


def _check_test(check: CheckResult, filename: str, lang: str) -> dict[str, Any]:
    """A graded check: "pass", "fail", or "error" for a run that crashed, hung or hit a limit."""
    name = f"{check.name} [{check.device}] ({check.score:g}/{check.max_score:g})"
    if check.status == "passed":
        return _test(name, "pass", score=check.score, filename=filename)
    details = check_details(check, lang)
    status = "error" if check.kind == "runtime" else "fail"
    # A failed test's message never reaches the log: its details are shown as its test_code.
    return _test(name, status, score=check.score, message=details,
                 test_code=details if status == "fail" else "", filename=filename)


def _import_test(failed: ImportFailure, lang: str) -> dict[str, Any]:
    """The file that did not import, told once; each check's test says only not graded."""
    return _test(feedback.ui("import_test", lang, file=failed.file), "error",
                 message=check_details(failed, lang), test_code=failed.code,
                 filename=failed.file, line_no=failed.line or 0)


def _status(tests: list[dict[str, Any]], report: Report) -> str:
    """The runner's status: "error" when the file could not be graded or imported."""
    if report.error or report.import_error is not None:
        return "error"
    return "pass" if all(test["status"] == "pass" for test in tests) else "fail"


def result_json(report: Report, *, view: View = STUDENT, lang: str = "en") -> dict[str, Any]:
    """The decoded `result` of one submission, for the reader `view` (hidden checks and their
    points left out of a student's copy until released)."""
    shown = view.of(report).report
    filename = PurePath(report.submission).name
    if report.error:  # one test: the reason, and the points it could have had in its name
        tests = [_test(f"{feedback.ui('grading_test', lang)} (0/{shown.max_score:g})", "error",
                       message=feedback.ui("not_graded", lang, error=report.error),
                       filename=filename)]
    else:
        tests = [_check_test(check, filename, lang) for check in shown.checks
                 if check.status != "skipped"]
        if report.import_error is not None:
            tests.insert(0, _import_test(report.import_error, lang))
    return {"version": VERSION, "status": _status(tests, report),
            "max_score": _points(shown.max_score), "tests": tests}


def render(reports: Sequence[Report], *, view: View, lang: str) -> str:
    """The result of exactly one report as JSON text (`check --format github-classroom`); the
    workflow base64-encodes it into the step's output."""
    (report,) = reports
    return json.dumps(result_json(report, view=view, lang=lang), indent=2) + "\n"
