"""Classroom 50: the `result.json` an autograder writes (schema "classroom50/result/v1").

The contract (foundation50/classroom50, schemas/result-v1.schema.json and the wiki's "Advanced
Autograding"): integer `score` and `max-score` (hyphenated), `tests[]` of `test-name`, `passed`,
`score`, `max-score` (extra keys kept), and the submission's identity (`classroom`,
`assignment`, `submission`, `commit`, `release`, `review`, `datetime`) read from the runner's
environment. The runner itself stamps `owner`, `assignment_type`, `datetime` and `graded_at`.

Points are integers there. When a rubric has fractional points (0.5), every check's points are
multiplied by the smallest of 2, 4, 10 or 100 that makes them whole; each test says by how much
(`points-scale`), as the top level admits no extra key.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from grader import feedback
from grader.exporters.points import points_scale
from grader.models import Report
from grader.platforms.classroom50.identity import SCHEMA, identity
from grader.views import STUDENT, View


def result_json(report: Report, *, env: Mapping[str, str], view: View = STUDENT,
                lang: str = "en") -> dict[str, Any]:
    """result.json for one submission. Classroom 50 shows results to students: hidden checks
    are left out unless released (and its bundle is public: see docs/classroom50.md)."""
    shown = view.of(report).report
    checks = [c for c in shown.checks if c.status != "skipped"]
    scale = points_scale([c.max_score for c in checks] + [shown.max_score])
    tests = [{
        "test-name": f"{c.name} [{c.device}]",
        "passed": c.status == "passed",
        "score": round(c.score * scale),
        "max-score": round(c.max_score * scale),
        "message": c.message,
        "expected": c.expected,
        "got": c.got,
        "hint": c.hint,
        "check": c.id,
    } for c in checks]
    if report.import_error is not None:  # the reason, once; each check says not graded
        failed = report.import_error
        tests.insert(0, {"test-name": feedback.ui("import_test", lang, file=failed.file),
                         "passed": False, "score": 0, "max-score": 0, "message": failed.message,
                         "expected": failed.expected, "got": failed.got, "hint": failed.hint,
                         "check": "import"})
    if report.error:  # one failed test carries the reason and the points it could have had
        tests = [{"test-name": feedback.ui("grading_test", lang), "passed": False, "score": 0,
                  "max-score": round(shown.max_score * scale), "message": report.error}]
    if scale != 1:
        for test in tests:
            test["points-scale"] = scale  # the top level admits only the schema's own keys
    return {
        "schema": SCHEMA,
        **identity(env),
        "score": sum(t["score"] for t in tests),
        "max-score": sum(t["max-score"] for t in tests),
        "tests": tests,
    }


def render(reports: Sequence[Report], *, view: View, lang: str) -> str:
    """result.json for one report, its identity from this process's environment (the
    runner's, when Classroom 50 runs it)."""
    (report,) = reports
    return json.dumps(result_json(report, env=os.environ, view=view, lang=lang), indent=2) + "\n"
