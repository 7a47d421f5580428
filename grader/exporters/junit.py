"""JUnit XML (CodeGrade, CI dashboards): a testsuite per submission, a testcase per check.

A failed check is a `failure` (the submission's code is wrong); a `runtime` check (the
submission crashed, hung or exhausted a limit) and a submission that could not be graded are an
`error`; a check for an absent device is `skipped`. Written with ElementTree; characters XML
1.0 forbids (a student's stray control bytes) are replaced, so the file always parses.

Points, for readers that score by the share of passing test cases. CodeGrade's Unit Test step
documents "the fraction of successful tests"; its parser (cg_junit/__init__.py of the
CodeGra.de backend; the documentation does not say so) weighs each testcase by a `weight`
attribute (default 1): score = weight of the cases with no failure, error or skipped child /
(all weight - skipped weight). So
each check's case carries `weight="<its max_score>"`: a passed check adds its points, a failed
one only to the total, a zero-point check nothing, a skipped one is left out. A check scored
part of its points (the model allows it; the engine gives all or nothing) is its failed case,
weighing the points it lost, and one passed case "(partial credit)" weighing those it earned.
A submission that could not be graded is one error case weighing its maximum; the case of a
file that did not import weighs nothing (its checks' cases carry the points). Readers that
ignore `weight` (junitparser, CI dashboards) still see one case per check, named as before:
`zero_grad keeps each grad object [cpu] (2/2)`.

For a reader that only counts cases, `points_as_cases=True` writes one case per point instead
(`... (point 1 of 2)`; with fractional points, equal parts of 1/2, 1/4, 1/10 or 1/100), the
points earned passing and the rest carrying the check's outcome; a zero-point check is one
skipped case. It is opt-in because it no longer gives one case per check.

CodeGrade's parser reads every child of a testsuite as a testcase, so the suite's points as
`<properties>` made it reject the whole file: they are written only with `properties=True`.
It also needs `time` on every testcase, and suite counts that match the cases.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from grader import feedback
from grader.exporters.points import points_scale
from grader.exporters.text import check_details
from grader.models import CheckResult, Report
from grader.views import STUDENT, View

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


@dataclass(frozen=True)
class _Case:
    """One testcase: `outcome` is its child element's tag, or "" for a passed case."""

    classname: str
    name: str
    weight: float
    outcome: str = ""
    message: str = ""
    type: str = ""
    text: str = ""


def _text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value)


def _outcome(check: CheckResult, lang: str, classname: str, name: str,
             weight: float) -> _Case:
    """The case that carries a check's own outcome (failed, errored or skipped)."""
    if check.status == "skipped":
        return _Case(classname, name, weight, "skipped", check.message)
    tag = "error" if check.kind == "runtime" else "failure"
    return _Case(classname, name, weight, tag, check.message, check.kind,
                 check_details(check, lang))


def _weighted(check: CheckResult, classname: str, lang: str) -> list[_Case]:
    """The check's case weighing its max_score; a partial score adds a passed case for it."""
    name = f"{check.name} [{check.device}] ({check.score:g}/{check.max_score:g})"
    if check.status == "passed":
        return [_Case(classname, name, check.max_score)]
    if check.status == "failed" and 0 < check.score <= check.max_score:
        # Partial credit; or a check failing at no cost (a broken callee's follow-on,
        # docs/semantics.md#follow-on-failures-told-once): its failure weighs nothing.
        return [_outcome(check, lang, classname, name, check.max_score - check.score),
                _Case(classname, feedback.ui("junit_partial", lang, name=name), check.score)]
    return [_outcome(check, lang, classname, name, check.max_score)]


def _point_cases(check: CheckResult, classname: str, scale: int, lang: str) -> list[_Case]:
    """One case per point (or per 1/scale of one): the earned ones pass, the rest fail."""
    name = f"{check.name} [{check.device}]"
    parts, earned = round(check.max_score * scale), round(check.score * scale)
    if check.status == "skipped":
        return [_outcome(check, lang, classname, name, 0.0)]
    if parts == 0:  # a zero-point check: shown, never counted
        details = check_details(check, lang) if check.status == "failed" else ""
        return [_Case(classname, name, 0.0, "skipped", feedback.ui("junit_no_points", lang),
                      text=details)]
    key, unit = ("junit_point", 1.0) if scale == 1 else ("junit_part", 1 / scale)
    cases = []
    if check.status == "failed" and earned >= parts:  # failed at no cost: told, not counted
        cases.append(_Case(classname, name, 0.0, "skipped", check.message,
                           text=check_details(check, lang)))
    for k in range(1, parts + 1):
        part = feedback.ui(key, lang, name=name, k=k, n=parts, points=unit)
        if k <= earned or check.status == "passed":
            cases.append(_Case(classname, part, unit))
        else:  # the details once, on the first point lost; the others repeat only the message
            lost = _outcome(check, lang, classname, part, unit)
            cases.append(lost if k == earned + 1 else replace(lost, text=""))
    return cases


def _cases(report: Report, shown: Report, lang: str, *, points_as_cases: bool) -> list[_Case]:
    """Every testcase of one submission's suite, in order."""
    if report.error:  # one case: the reason, weighing the points it could have had
        return [_Case(report.lab, feedback.ui("grading_test", lang), shown.max_score, "error",
                      report.error, "not_graded")]
    cases = []
    failed = report.import_error
    if failed is not None:  # the one place that says why; each check says not graded
        cases.append(_Case(report.lab, feedback.ui("import_test", lang, file=failed.file), 0.0,
                           "error", failed.message, "import", check_details(failed, lang)))
    scale = points_scale(value for c in shown.checks for value in (c.score, c.max_score))
    for check in shown.checks:
        classname = f"{report.lab}.{check.function}"
        cases += (_point_cases(check, classname, scale, lang) if points_as_cases
                  else _weighted(check, classname, lang))
    return cases


def _suite(parent: ET.Element, report: Report, *, view: View, lang: str, points_as_cases: bool,
           properties: bool) -> None:
    shown = view.of(report).report
    cases = _cases(report, shown, lang, points_as_cases=points_as_cases)
    suite = ET.SubElement(parent, "testsuite", {
        "name": _text(f"{report.lab}: {report.student or report.submission}"),
        "tests": str(len(cases)),
        "failures": str(sum(case.outcome == "failure" for case in cases)),
        "errors": str(sum(case.outcome == "error" for case in cases)),
        "skipped": str(sum(case.outcome == "skipped" for case in cases)),
        "time": f"{report.elapsed_s:.3f}",
    })
    if properties:  # standard JUnit, but CodeGrade rejects a suite holding anything else
        element = ET.SubElement(suite, "properties")
        for key, value in (("score", f"{shown.score:g}"), ("max_score", f"{shown.max_score:g}"),
                           ("grader_version", report.grader_version),
                           ("torch_version", report.torch_version)):
            ET.SubElement(element, "property", {"name": key, "value": value})
    for case in cases:
        element = ET.SubElement(suite, "testcase", {
            "classname": _text(case.classname), "name": _text(case.name), "time": "0",
            "weight": f"{case.weight:.10g}"})
        if case.outcome == "skipped":
            ET.SubElement(element, "skipped", {"message": _text(case.message)}).text = (
                _text(case.text) or None)
        elif case.outcome:
            ET.SubElement(element, case.outcome, {"message": _text(case.message),
                                                  "type": case.type}).text = _text(case.text)


def junit_xml(reports: Iterable[Report], *, view: View = STUDENT, lang: str = "en",
              points_as_cases: bool = False, properties: bool = False) -> str:
    """One document for any number of submissions (one for `check`, a class for `export`).

    `points_as_cases`: one case per point, for readers that count cases and ignore `weight`;
    `properties`: the suite's score, max_score and versions as `<properties>` (not CodeGrade).
    """
    root = ET.Element("testsuites", {"name": "inplace-grader"})
    for report in reports:
        _suite(root, report, view=view, lang=lang, points_as_cases=points_as_cases,
               properties=properties)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def render(reports: Sequence[Report], *, view: View, lang: str) -> str:
    """The JUnit XML of these reports (`check --format junit`): one case per check, weighted."""
    return junit_xml(reports, view=view, lang=lang)
