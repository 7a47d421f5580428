"""JUnit XML, read back with junitparser (what CI dashboards read) and scored the way
CodeGrade's Unit Test step scores it, over real graded submissions."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from grader.engine import CheckOptions, check_submission
from grader.exporters.junit import junit_xml, render
from grader.hidden import load_hidden_file
from grader.models import CheckResult, Report
from grader.views import STAFF, STUDENT, View
from tests.conftest import ROOT, SOLUTION, SharedSandboxes, grader_cli

# `check` run in this process borrows its sandbox (conftest.shared_check_sandboxes).
pytestmark = pytest.mark.usefixtures("shared_check_sandboxes")

KNOWN = ROOT / "tests" / "submissions" / "optim"


def check(check_id: str, status: str, *, kind: str = "numerics", device: str = "cpu",
          message: str = "", hidden: bool = False, points: float = 2.0,
          score: float | None = None) -> CheckResult:
    function = check_id.split(".")[0]
    return CheckResult(id=check_id, name=f"{check_id} name", function=function, kind=kind,
                       device=device, status=status,  # type: ignore[arg-type]
                       passed=None if status == "skipped" else status == "passed",
                       score=(points if status == "passed" else 0.0) if score is None else score,
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


class Malformed(Exception):
    """What CodeGrade's parser raises for XML that is not JUnit as it reads it (0 points)."""


def codegrade_fraction(xml: str) -> float:
    """The Unit Test step's score as a fraction, computed as CodeGrade's own code does.

    CodeGra.de backend (te5in/CodeGra.de, Boccca2014/CodeGra.de): cg_junit/__init__.py
    `CGJunit.parse_file` (the root is `testsuites` or one `testsuite`), `_CGJunitSuite.from_xml`
    (every child is a testcase; name, errors, failures, tests required, the counts must match
    the cases), `_CGJunitCase.from_xml` (name and classname required, `time` read with
    float(), `weight` defaulting to 1; error, failure or skipped among its children, else a
    success unless it holds an unknown tag), `CGJunit.__init__` (total_tests = weight of all
    cases - weight skipped, times the suite's `weight`); psef/models/auto_test_step.py
    `_JunitTest._get_points_from_junit`: safe_div(total_success, total_tests, default=0)."""
    root = ET.fromstring(xml)
    suites = list(root) if root.tag == "testsuites" else [root]
    success = total = skipped_weight = 0.0
    for suite in suites:
        if suite.tag != "testsuite" or not {"name", "errors", "failures", "tests"} <= set(
                suite.attrib):
            raise Malformed(suite.tag)
        counts = {"failure": 0, "error": 0, "skipped": 0}
        suite_weight = float(suite.attrib.get("weight", 1.0))
        for case in suite:
            if case.tag != "testcase" or not {"name", "classname"} <= set(case.attrib):
                raise Malformed(f"unknown tag {case.tag!r} in a testsuite")
            float(case.attrib["time"])  # a KeyError in CodeGrade: not even a parse error
            weight = float(case.attrib.get("weight", 1.0))
            tags = {child.tag for child in case}
            for tag in counts.keys() & tags:  # each of is_failure, is_error, is_skipped
                counts[tag] += 1
            state = next((tag for tag in ("failure", "error", "skipped") if tag in tags), "")
            if not state and tags <= {"system-out", "system-err"}:
                success += weight * suite_weight
            if state == "skipped":
                skipped_weight += weight * suite_weight
            total += weight * suite_weight
        if (counts["failure"], counts["error"], counts["skipped"], len(suite)) != (
                int(suite.attrib["failures"]), int(suite.attrib["errors"]),
                int(suite.attrib.get("skipped", 0)), int(suite.attrib["tests"])):
            raise Malformed("the suite's counts do not match its cases")
    run = total - skipped_weight
    return success / run if run else 0.0


def counted_fraction(xml: str) -> float:
    """A reader that ignores `weight`: passed cases / (cases - skipped)."""
    cases = list(ET.fromstring(xml).iter("testcase"))
    outcomes = [{child.tag for child in case} for case in cases]
    passed = sum(not tags & {"failure", "error", "skipped"} for tags in outcomes)
    run = sum("skipped" not in tags for tags in outcomes)
    return passed / run if run else 0.0


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory,
           sandboxes: SharedSandboxes) -> dict[str, Report]:
    """Real graded submissions with failed checks worth different points, one of them with
    its failing checks hidden, one that does not import and one that cannot be graded."""
    folder = tmp_path_factory.mktemp("junit")
    hidden = folder / "hidden.toml"
    hidden.write_text('lab = "optim"\n'
                      'hide = ["Adam.trajectory.small_grads", "Adam.no_history"]\n')
    broken = folder / "broken" / "optimizer.py"
    broken.parent.mkdir()
    broken.write_text(SOLUTION.read_text().replace("-> None:", "-> None", 1))
    empty = folder / "empty" / "optimizer.py"
    empty.parent.mkdir()
    empty.write_text("\n")
    cases = {"sgd_step": (KNOWN / "sgd_step_data_assign.py", None),
             "adam": (KNOWN / "Adam_no_bias_correction.py", None),
             "hidden": (KNOWN / "Adam_no_bias_correction.py", load_hidden_file(hidden)),
             "import": (broken, None), "empty": (empty, None)}
    sandbox = sandboxes("optim")
    return {name: check_submission(path, lab="optim", sandbox=sandbox,
                                   options=CheckOptions(device="cpu", hidden=secret))
            for name, (path, secret) in cases.items()}


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


@pytest.mark.parametrize("name", ["sgd_step", "adam", "hidden"])
def test_codegrade_scores_a_graded_report_as_we_do(graded: dict[str, Report],
                                                   name: str) -> None:
    shown = STUDENT.of(graded[name]).report
    assert 0 < shown.score < shown.max_score
    xml = junit_xml([graded[name]])
    assert codegrade_fraction(xml) == pytest.approx(shown.score / shown.max_score)
    if name == "hidden":  # a failed check and a passed one withheld from the student
        assert shown.max_score < graded[name].max_score
    staff = junit_xml([graded[name]], view=STAFF)
    assert codegrade_fraction(staff) == pytest.approx(graded[name].score /
                                                      graded[name].max_score)
    # Checks are worth 1 or 2 points: counting cases would not give the score.
    assert counted_fraction(xml) != pytest.approx(shown.score / shown.max_score)


@pytest.mark.parametrize("name", ["sgd_step", "adam", "hidden"])
def test_one_case_per_point_gives_the_score_to_a_reader_that_counts_cases(
        graded: dict[str, Report], name: str) -> None:
    shown = STUDENT.of(graded[name]).report
    xml = junit_xml([graded[name]], points_as_cases=True)
    assert counted_fraction(xml) == pytest.approx(shown.score / shown.max_score)
    assert codegrade_fraction(xml) == pytest.approx(shown.score / shown.max_score)
    if name == "sgd_step":
        names = [case.get("name") for case in ET.fromstring(xml).iter("testcase")]
        assert "sgd_step writes into each parameter's own memory [cpu] (point 2 of 2)" in names


def test_junitparser_reads_one_case_per_check_named_as_before(
        graded: dict[str, Report], tmp_path: Path) -> None:
    full = graded["sgd_step"]
    (suite,) = list(parse(junit_xml([full]), tmp_path))
    assert [case.name for case in suite] == [
        f"{c.name} [{c.device}] ({c.score:g}/{c.max_score:g})" for c in full.checks]
    failed = [case for case in suite if not case.is_passed and not case.is_skipped]
    assert len(failed) == sum(c.status == "failed" for c in full.checks) > 0
    assert (suite.tests, suite.failures) == (len(full.checks), len(failed))
    assert suite.skipped == sum(c.status == "skipped" for c in full.checks) > 0
    assert list(suite.properties()) == [], "no <properties>: CodeGrade rejects them"
    old = next(iter(parse(junit_xml([full], properties=True), tmp_path)))
    assert {p.name: p.value for p in old.properties()} == {
        "score": f"{full.score:g}", "max_score": f"{full.max_score:g}",
        "grader_version": full.grader_version, "torch_version": full.torch_version}
    with pytest.raises(Malformed):
        codegrade_fraction(junit_xml([full], properties=True))


def test_an_ungradable_or_unimportable_submission_scores_zero(graded: dict[str, Report],
                                                              tmp_path: Path) -> None:
    for name in ("import", "empty"):
        xml = junit_xml([graded[name]])
        assert codegrade_fraction(xml) == counted_fraction(xml) == 0.0
        cases = list(ET.fromstring(xml).iter("testcase"))
        assert cases[0].find("error") is not None
        assert all(case.get("time") == "0" for case in cases)
        assert codegrade_fraction(junit_xml([graded[name]], points_as_cases=True)) == 0.0
    (first, *rows) = next(iter(parse(junit_xml([graded["import"]]), tmp_path)))
    assert first.name == "import optimizer.py" and first.result[0].type == "import"
    assert len(rows) == len(graded["import"].checks)


def test_partial_fractional_and_zero_point_checks_keep_the_score() -> None:
    checks = [check("f.a", "passed", points=0.5), check("f.b", "failed", points=1.5, score=0.5),
              check("f.c", "failed", points=0.0), check("g.d", "passed", points=0.0),
              check("g.e", "failed", kind="runtime", points=1.25),
              check("f.a", "skipped", device="cuda")]
    graded = report("carol", checks)
    expected = graded.score / graded.max_score
    weighted = junit_xml([graded])
    assert codegrade_fraction(weighted) == pytest.approx(expected)
    names = [case.get("name") for case in ET.fromstring(weighted).iter("testcase")]
    assert "f.b name [cpu] (0.5/1.5) (partial credit)" in names
    by_point = junit_xml([graded], points_as_cases=True)
    assert counted_fraction(by_point) == pytest.approx(expected)
    assert codegrade_fraction(by_point) == pytest.approx(expected)
    zero = [case for case in ET.fromstring(by_point).iter("testcase")
            if case.get("name") == "f.c name [cpu]"]
    assert len(zero) == 1 and zero[0].find("skipped") is not None, "shown, never counted"
    assert "(part 1 of 6, 0.25 points each)" in by_point  # 1.5 points in quarters


def test_a_check_failing_at_no_cost_is_told_and_keeps_the_score() -> None:
    """A follow-on failure (a method calling a broken lab function, issue 30) fails with its
    points: every reader gets the report's score, and the failure is still in the file."""
    checks = [check("zero_grad.a", "failed", points=2.0),
              check("SGD.zero_grad", "failed", points=2.0, score=2.0, message="calls yours"),
              check("SGD.b", "passed", points=2.0)]
    graded = report("dan", checks)
    assert graded.score / graded.max_score == pytest.approx(4 / 6)
    weighted = junit_xml([graded])
    assert codegrade_fraction(weighted) == pytest.approx(4 / 6)
    assert "calls yours" in weighted
    by_point = junit_xml([graded], points_as_cases=True)
    assert counted_fraction(by_point) == pytest.approx(4 / 6)
    assert codegrade_fraction(by_point) == pytest.approx(4 / 6)
    assert "calls yours" in by_point


def test_render_is_the_default_document(graded: dict[str, Report]) -> None:
    reports = [graded["sgd_step"], graded["adam"]]
    assert render(reports, view=STUDENT, lang="en") == junit_xml(reports)


def test_check_prints_junit_for_one_submission(tmp_path: Path) -> None:
    run = grader_cli("check", str(SOLUTION), "--format", "junit", "--device", "cpu")
    assert run.returncode == 0, run.stderr
    xml = parse(run.stdout, tmp_path)
    cases = [case for suite in xml for case in suite]
    assert cases and all(case.is_passed or case.is_skipped for case in cases)
    assert codegrade_fraction(run.stdout) == 1.0
