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

import time
from collections.abc import Iterable, Mapping
from typing import Any

from grader.hidden import student_view
from grader.models import Report

SCHEMA = "classroom50/result/v1"
SCALES = (1, 2, 4, 10, 100)


def points_scale(points: Iterable[float]) -> int:
    """The smallest scale that makes all these points whole (100 at most)."""
    values = list(points)
    for scale in SCALES:
        if all(abs(value * scale - round(value * scale)) < 1e-9 for value in values):
            return scale
    return SCALES[-1]


def _identity(env: Mapping[str, str]) -> dict[str, Any]:
    """The submission's identity from the runner's environment; placeholders for a local
    run, so the file still validates."""
    commit = env.get("COMMIT_URL") or "local"
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "classroom": env.get("CLASSROOM") or "local",
        "assignment": env.get("ASSIGNMENT") or "local",
        "assignment_type": env.get("ASSIGNMENT_TYPE") or "individual",
        "owner": env.get("OWNER") or env.get("USERNAME") or "local",
        "submission": env.get("SUBMISSION_TAG") or "submit/local",
        "commit": commit,
        "release": env.get("RELEASE_URL") or commit,
        "review": env.get("REVIEW_URL") or commit,
        "datetime": now,
    }


def result_json(report: Report, *, env: Mapping[str, str], release: bool = False
                ) -> dict[str, Any]:
    """result.json for one submission. Classroom 50 shows results to students: hidden checks
    are left out unless released (and its bundle is public: see docs/classroom50.md)."""
    view = student_view(report, release=release).report
    checks = [c for c in view.checks if c.status != "skipped"]
    scale = points_scale([c.max_score for c in checks] + [view.max_score])
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
        tests.insert(0, {"test-name": f"import {failed.file}", "passed": False, "score": 0,
                         "max-score": 0, "message": failed.message, "expected": failed.expected,
                         "got": failed.got, "hint": failed.hint, "check": "import"})
    if report.error:  # one failed test carries the reason and the points it could have had
        tests = [{"test-name": "grading", "passed": False, "score": 0,
                  "max-score": round(view.max_score * scale), "message": report.error}]
    if scale != 1:
        for test in tests:
            test["points-scale"] = scale  # the top level admits only the schema's own keys
    return {
        "schema": SCHEMA,
        **_identity(env),
        "score": sum(t["score"] for t in tests),
        "max-score": sum(t["max-score"] for t in tests),
        "tests": tests,
    }
