"""JUnit XML (CodeGrade, CI dashboards): a testsuite per submission, a testcase per check.

A failed check is a `failure` (the submission's code is wrong); a `runtime` check (the
submission crashed, hung or exhausted a limit) and a submission that could not be graded are an
`error`; a check for an absent device is `skipped`. Points travel as testsuite properties.
Written with ElementTree; characters XML 1.0 forbids (a student's stray control bytes) are
replaced, so the file always parses.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence

from grader.exporters.text import check_details
from grader.models import Report
from grader.views import STUDENT, View

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value)


def _suite(parent: ET.Element, report: Report, *, view: View, lang: str) -> None:
    shown = view.of(report).report
    name = f"{report.lab}: {report.student or report.submission}"
    checks = [] if report.error else shown.checks
    failed_import = report.import_error
    failures = sum(c.status == "failed" and c.kind != "runtime" for c in checks)
    errors = (sum(c.status == "failed" and c.kind == "runtime" for c in checks)
              + bool(report.error) + bool(failed_import))
    suite = ET.SubElement(parent, "testsuite", {
        "name": _text(name), "tests": str((len(checks) or 1) + bool(failed_import)),
        "failures": str(failures),
        "errors": str(errors), "skipped": str(sum(c.status == "skipped" for c in checks)),
        "time": f"{report.elapsed_s:.3f}",
    })
    properties = ET.SubElement(suite, "properties")
    for key, value in (("score", f"{shown.score:g}"), ("max_score", f"{shown.max_score:g}"),
                       ("grader_version", report.grader_version),
                       ("torch_version", report.torch_version)):
        ET.SubElement(properties, "property", {"name": key, "value": value})
    if report.error:
        case = ET.SubElement(suite, "testcase", {"classname": report.lab, "name": "grading"})
        ET.SubElement(case, "error", {"message": _text(report.error), "type": "not_graded"})
        return
    if failed_import is not None:  # the one place that says why; each check says not graded
        case = ET.SubElement(suite, "testcase", {"classname": report.lab,
                                                 "name": _text(f"import {failed_import.file}")})
        ET.SubElement(case, "error", {"message": _text(failed_import.message),
                                      "type": "import"}).text = _text(
            check_details(failed_import, lang))
    for check in checks:
        case = ET.SubElement(suite, "testcase", {
            "classname": f"{report.lab}.{check.function}",
            "name": _text(f"{check.name} [{check.device}] ({check.score:g}/{check.max_score:g})"),
            "time": "0",
        })
        if check.status == "skipped":
            ET.SubElement(case, "skipped", {"message": _text(check.message)})
        elif check.status == "failed":
            tag = "error" if check.kind == "runtime" else "failure"
            ET.SubElement(case, tag, {"message": _text(check.message),
                                      "type": check.kind}).text = _text(check_details(check, lang))


def junit_xml(reports: Iterable[Report], *, view: View = STUDENT, lang: str = "en") -> str:
    """One document for any number of submissions (one for `check`, a class for `export`)."""
    root = ET.Element("testsuites", {"name": "inplace-grader"})
    for report in reports:
        _suite(root, report, view=view, lang=lang)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def render(reports: Sequence[Report], *, view: View = STUDENT, lang: str = "en") -> str:
    return junit_xml(reports, view=view, lang=lang)
