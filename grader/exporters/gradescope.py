"""Gradescope: the `results.json` an autograder writes, from a report.

Gradescope's documented fields (gradescope-autograders.readthedocs.io, "specs"): a top-level
`score`, `execution_time`, `output` and `tests[]`, each test with `name`, `score`, `max_score`,
`status`, `output`, `visibility`, `tags` and `number`. A check becomes a test; hidden checks get
the visibility the instructor chose (`after_published` by default) until they are released;
checks for an absent device are left out (they are worth nothing).
"""

from __future__ import annotations

from typing import Any, Literal

from grader import feedback
from grader.exporters.text import check_details, explained
from grader.hidden import student_view
from grader.models import Report

Visibility = Literal["visible", "hidden", "after_due_date", "after_published"]


def _summary(report: Report, lang: str, *, release: bool) -> str:
    """The top-level text students read: hidden checks and their points left out until
    released (the same view as their feedback file)."""
    view = student_view(report, release=release)
    shown = view.report
    title = feedback.ui("visible_title" if view.withholds else "title", lang,
                        lab=shown.lab, score=shown.score, max_score=shown.max_score)
    if report.error:
        return f"{feedback.ui('not_graded', lang, error=report.error)}\n{title}"
    graded = [c for c in shown.checks if c.status != "skipped"]
    failed = [c for c in graded if c.status == "failed"]
    verdict = (feedback.ui("all_passed", lang) if not failed
               else feedback.ui("some_failed", lang, failed=len(failed), total=len(graded)))
    flagged = f"\n{feedback.ui('flagged', lang)}" if report.integrity else ""
    failed_import = ("\n\n" + "\n".join(explained(report.import_error, lang))
                     if report.import_error is not None else "")
    return f"{title}\n{verdict}{flagged}{failed_import}"


def results_json(report: Report, *, lang: str = "en",
                 hidden_visibility: Visibility = "after_published",
                 release: bool = False) -> dict[str, Any]:
    """The results.json object for one graded (or ungradable) submission."""
    tests: list[dict[str, Any]] = []
    per_function: dict[str, int] = {}  # function -> checks numbered so far
    for check in [] if report.error else report.checks:  # not gradable: its one line says all
        if check.status == "skipped":
            continue
        per_function[check.function] = per_function.get(check.function, 0) + 1
        tests.append({
            "name": f"{check.name} [{check.device}]",
            "number": f"{list(per_function).index(check.function) + 1}."
                      f"{per_function[check.function]}",
            "score": check.score,
            "max_score": check.max_score,
            "status": "passed" if check.status == "passed" else "failed",
            "output": "" if check.status == "passed" else check_details(check, lang),
            "tags": [check.function, check.kind],
            "visibility": hidden_visibility if check.hidden and not release else "visible",
            "extra_data": {"id": check.id, "device": check.device},
        })
    return {
        "score": report.score,
        "execution_time": round(report.elapsed_s, 3),
        "output": _summary(report, lang, release=release),
        "output_format": "text",
        "test_output_format": "text",
        "test_name_format": "text",
        "stdout_visibility": "hidden",
        "tests": tests,
        # extra_data is for course staff (Gradescope shows students the rest).
        "extra_data": {"lab": report.lab, "grader_version": report.grader_version,
                       "torch_version": report.torch_version,
                       "protections": report.protections, "integrity": report.integrity},
    }


def failure_results(message: str) -> dict[str, Any]:
    """What is written when grading itself could not run: score 0 and the reason, so that
    Gradescope never shows "The autograder failed to execute correctly" without one."""
    return {"score": 0.0, "output": message, "output_format": "text", "tests": []}
