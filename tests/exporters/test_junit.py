"""JUnit XML, read back with junitparser (what CI dashboards and CodeGrade-style tools use)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from junitparser import Error, Failure, JUnitXml, Skipped

from grader.exporters.junit import junit_xml
from grader.models import CheckResult, Report
from grader.views import View
from tests.conftest import ROOT, SOLUTION


def check(check_id: str, status: str, *, kind: str = "numerics", device: str = "cpu",
          message: str = "", hidden: bool = False, points: float = 2.0) -> CheckResult:
    function = check_id.split(".")[0]
    return CheckResult(id=check_id, name=f"{check_id} name", function=function, kind=kind,
                       device=device, status=status,  # type: ignore[arg-type]
                       passed=None if status == "skipped" else status == "passed",
                       score=points if status == "passed" else 0.0,
                       max_score=0.0 if status == "skipped" else points, message=message,
                       expected="e1" if status == "failed" else "",
                       got="g\x01ot" if status == "failed" else "",
                       hint="h" if status == "failed" else "", hidden=hidden)


def report(student: str, checks: list[CheckResult], error: str = "") -> Report:
    return Report(lab="optim", student=student, score=sum(c.score for c in checks),
                  max_score=sum(c.max_score for c in checks), checks=checks, error=error,
                  grader_version="1", torch_version="2", elapsed_s=0.5)


def parse(text: str, tmp_path: Path) -> JUnitXml:
    path = tmp_path / "junit.xml"
    path.write_text(text, encoding="utf-8")
    return JUnitXml.fromfile(str(path))


def test_each_check_is_a_testcase_with_its_outcome(tmp_path: Path) -> None:
    graded = report("alice", [
        check("sgd_step.values", "passed"),
        check("sgd_step.same_storage", "failed", kind="storage", message="params[0] replaced"),
        check("zero_grad.runtime", "failed", kind="runtime", message="did not finish in 3 s"),
        check("sgd_step.values", "skipped", device="cuda", message="no cuda"),
        check("Adam.trajectory.x@h", "failed", hidden=True, message="secret"),
    ])
    xml = parse(junit_xml([graded, report("bob", [], error="bob.py is empty")]), tmp_path)
    suites = list(xml)
    assert [s.name for s in suites] == ["optim: alice", "optim: bob"]
    alice = {case.name: case for case in suites[0]}
    assert len(alice) == 4, "the hidden check is withheld"
    passed = alice["sgd_step.values name [cpu] (2/2)"]
    assert passed.is_passed and passed.classname == "optim.sgd_step"
    failure = alice["sgd_step.same_storage name [cpu] (0/2)"].result[0]
    assert isinstance(failure, Failure) and failure.message == "params[0] replaced"
    assert failure.type == "storage" and "expected: e1" in failure.text
    assert "\ufffd" in failure.text, "a control character is replaced, the file still parses"
    assert isinstance(alice["zero_grad.runtime name [cpu] (0/2)"].result[0], Error)
    assert isinstance(alice["sgd_step.values name [cuda] (0/0)"].result[0], Skipped)
    assert (suites[0].tests, suites[0].failures, suites[0].errors, suites[0].skipped) == \
        (4, 1, 1, 1)
    bob = list(suites[1])
    assert len(bob) == 1 and isinstance(bob[0].result[0], Error)
    assert bob[0].result[0].message == "bob.py is empty"
    released = parse(junit_xml([graded], view=View(release=True)), tmp_path)
    assert len(list(next(iter(released)))) == 5


def test_check_prints_junit_for_one_submission(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "grader", "check", str(SOLUTION), "--format",
                          "junit", "--device", "cpu"], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    xml = parse(run.stdout, tmp_path)
    cases = [case for suite in xml for case in suite]
    assert cases and all(case.is_passed or case.is_skipped for case in cases)
