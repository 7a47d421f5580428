"""Every reproducer a known mistake gets fails next to that mistake and passes next to the
reference solution (docs/semantics.md#reproducers).

For each file of tests/submissions/<lab>/ that fails checks, its failed checks' reproducers
run in a fresh process beside a copy of the file, named as the lab's file: each must raise
AssertionError. The same reproducers beside solutions/<lab>/ must all run clean. A process
runs all of one file's reproducers, each in its own namespace with the student's module
imported afresh; the processes are forked from one that loaded torch once
(tests/reproducers_runner.py). The reports are the ones tests/test_known_submissions.py
graded, where both run in one session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.labs import LAB_FILES
from grader.models import CheckResult, Report
from grader.sandbox import Sandbox
from tests.test_known_submissions import CASES, expected_failures, graded

ROOT = Path(__file__).resolve().parents[1]
RUNNER = Path(__file__).with_name("reproducers_runner.py")
MISTAKES = [path for path in CASES if expected_failures(path)]
LABS = sorted({path.parent.name for path in MISTAKES})
# Of the failed checks a student sees that hold a property of the code, the share with a
# reproducer may not fall below this (bench/reproducers.py measures it: 94% to 99%).
COVERAGE = 0.9


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(sorted({p.parent.name for p in CASES})) as running:
        yield running


def self_reliance(code: str) -> list[str]:
    """The lines of a reproducer that import the grader: none may (it runs where only torch
    and the student's file are)."""
    return [line for line in code.splitlines()
            if line.strip().startswith(("import grader", "from grader"))]


def reproducers_of(report: Report) -> dict[str, str]:
    """The reproducers of a report's failed checks, by `<id> [<device>]`."""
    return {f"{check.id} [{check.device}]": check.reproducer for check in report.checks
            if check.status == "failed" and check.reproducer}


def run_beside(jobs: list[tuple[Path, dict[str, str]]], lab: str, folder: Path
               ) -> list[dict[str, str]]:
    """Each job's reproducers run beside a copy of its source file named as the lab's file,
    one fresh process per job: each reproducer's outcome ("ok", "AssertionError", or another
    exception), job by job."""
    listed = []
    for index, (source, reproducers) in enumerate(jobs):
        place = folder / str(index)
        place.mkdir(parents=True)
        shutil.copy(source, place / LAB_FILES[lab])
        listed.append({"folder": str(place), "module": LAB_FILES[lab].removesuffix(".py"),
                       "reproducers": reproducers})
    (folder / "jobs.json").write_text(json.dumps(listed))
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(RUNNER), str(folder / "jobs.json"),
                           str(folder / "outcomes.json")], cwd=folder, env=environment,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads((folder / "outcomes.json").read_text())
    return [found[job["folder"]] for job in listed]


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_each_reproducer_fails_beside_its_mistake_and_passes_beside_the_solution(
        lab: str, sandbox: Sandbox, tmp_path: Path) -> None:
    mistakes = [path for path in MISTAKES if path.parent.name == lab]
    reproducers = {path: reproducers_of(graded(path, sandbox)) for path in mistakes}
    code = {f"{path.stem}: {name}": text for path, found in reproducers.items()
            for name, text in found.items()}
    assert not [line for text in code.values() for line in self_reliance(text)]
    jobs = [(path, found) for path, found in reproducers.items() if found]
    unique = {text: name for name, text in code.items()}  # many mistakes share one
    solution = ROOT / "solutions" / lab / LAB_FILES[lab]
    *beside_mistakes, beside_solution = run_beside(
        [*jobs, (solution, {name: text for text, name in unique.items()})], lab, tmp_path)
    wrong = [f"beside {path.stem}: {name}: {outcome}\n{found[name]}"
             for (path, found), outcomes in zip(jobs, beside_mistakes, strict=True)
             for name, outcome in outcomes.items() if outcome != "AssertionError"]
    wrong += [f"beside the solution: {name}: {outcome}\n{code[name]}"
              for name, outcome in beside_solution.items() if outcome != "ok"]
    assert not wrong, "\n\n".join(wrong[:10])


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_most_failed_checks_have_a_reproducer(lab: str, sandbox: Sandbox) -> None:
    """A reproducer a builder stopped writing (one that raises, a renamed key) is not an
    error anywhere else: the failed check just goes without one."""
    asked = covered = 0
    for path in (path for path in MISTAKES if path.parent.name == lab):
        report = graded(path, sandbox)
        if report.import_error is not None:
            continue
        for check in report.checks:
            if check.status == "failed" and not check.hidden and check.kind not in (
                    "runtime", "policy") and not check.message.startswith(
                    ("not graded", "not shown")) and "is not implemented" not in check.message:
                asked += 1
                covered += bool(check.reproducer)
    assert covered >= COVERAGE * asked, (lab, covered, asked)


# --- without a sandbox: the words, the case found, the command line's errors ----------------

def _report(*checks: CheckResult) -> Report:
    return Report(lab="optim", score=0.0, max_score=1.0, checks=list(checks),
                  grader_version="0", torch_version="0", elapsed_s=0.0)


def _row(check_id: str = "sgd_step.same_storage", *, status: str = "failed",
         reproducer: str = "", hidden: bool = False, device: str = "cpu") -> CheckResult:
    return CheckResult(id=check_id, name=check_id, function=check_id.partition(".")[0],
                       kind="storage", device=device, status=status,  # type: ignore[arg-type]
                       passed=status == "passed", score=0.0, max_score=1.0,
                       message="`params[0]` now points to different memory",
                       reproducer=reproducer, hidden=hidden)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_reproducer_is_plain_python_with_its_messages_in_the_students_language(
        lang: str, tmp_path: Path) -> None:
    from grader.engine.wording import reproducer_text
    from grader.labs import get_lab
    from grader.labs.reproducers import Assert, Close, Raise, Reproducer, Runtime

    reproducer = Reproducer(("sgd_step",), (
        "x = torch.zeros(3)",
        "for i in range(2):",
        Assert("i < 1", "storage_replaced", {"function": "sgd_step",
                                              "tensor": Runtime("i", around="params[{}]")},
               indent=1),
        Close("x", "torch.ones(3)", "float32", "values", {"function": "f", "tensor": "x"}),
        "try:", "    1 / 0", "except Exception as error:",
        Raise("error", "raised", {"function": "sgd_step"}, indent=1),
    ))
    text = reproducer_text(reproducer, check_id="sgd_step.same_storage",
                           lab=get_lab("optim"), lang=lang)
    assert text.startswith("# ") and "sgd_step.same_storage" in text.splitlines()[0]
    assert "from optimizer import sgd_step" in text
    assert "torch.use_deterministic_algorithms(True" in text  # values are compared
    assert not self_reliance(text)
    compile(text, "reproducer", "exec")
    namespace: dict[str, object] = {}
    body = text.replace("from optimizer import sgd_step\n", "")
    with pytest.raises(AssertionError) as raised:
        exec(compile(body, "reproducer", "exec"), namespace)
    assert "params[1]" in str(raised.value)  # the run-time index, in the message
    assert ("memory" in str(raised.value)) if lang == "en" else ("메모리" in str(raised.value))
    notebook = reproducer_text(reproducer, check_id="sgd_step.same_storage",
                               lab=get_lab("optim"), lang=lang, notebook=True)
    assert "import sgd_step" not in notebook


def test_the_failing_case_is_the_first_that_fails_as_the_row_did() -> None:
    from grader.checks.evidence import Evidence
    from grader.checks.findings import PASS, Finding, fail
    from grader.engine.reproduce import failing_case
    from grader.labs.base import CheckSpec

    def judge(evidence: Evidence) -> Finding:
        for case in evidence.plan:
            if case["id"] in ("b", "c"):
                return fail("raised" if case["id"] == "b" else "values_mismatch")
        return PASS

    check = CheckSpec("f.values", "numerics", judge)
    evidence = Evidence(api={}, static_policy=[], policy_calls=[],
                        cases={"a": {}, "b": {}, "c": {}},
                        plan=({"id": "a"}, {"id": "b"}, {"id": "c"}))
    found = failing_case(check, evidence, fail("values_mismatch"))
    assert found is not None and found[0]["id"] == "c"
    found = failing_case(check, evidence, fail("storage_replaced"))
    assert found is not None and found[0]["id"] == "b"  # none fails alike: the first failure


def test_explain_names_the_failed_row_and_refuses_the_rest() -> None:
    from grader.errors import UsageError
    from grader.explain import failed_check, known_check

    report = _report(_row(device="cuda", reproducer="# cuda"), _row(reproducer="# cpu"),
                     _row("sgd_step.values", status="passed"),
                     _row("sgd_step.version_advances", hidden=True))
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
])
def test_explain_usage_errors_are_one_line_before_grading(args: list[str], message: str) -> None:
    done = subprocess.run([sys.executable, "-m", "grader", "check",
                           str(ROOT / "solutions" / "optim" / "optimizer.py"), *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not done.stdout


def test_gradescope_shows_a_failed_checks_reproducer_as_a_code_block() -> None:
    from grader.platforms.gradescope.results import results_json

    code = "# a `quoted` name\nassert False, 'x'\n"
    results = results_json(_report(_row(reproducer=code), _row("sgd_step.values",
                                                               status="passed")))
    failed, passed = results["tests"][:2]
    assert "```python\n# a `quoted` name\nassert False, 'x'\n```" in failed["output"]
    assert "```" not in passed["output"]


def test_a_notebook_test_cell_prints_each_visible_reproducer() -> None:
    from grader.platforms.nbgrader.kernel import reproducers_text

    text = reproducers_text(_report(_row(reproducer="assert False\n"),
                                    _row("sgd_step.values", reproducer="assert 0\n",
                                         hidden=True)), lang="en")
    assert "assert False" in text and "assert 0" not in text
