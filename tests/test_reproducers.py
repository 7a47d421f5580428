"""Every reproducer a known mistake gets fails next to that mistake and passes next to the
reference solution (docs/semantics.md#reproducers).

For each file of tests/submissions/<lab>/ that fails checks, its failed checks' reproducers
run in a fresh interpreter beside a copy of the file, named as the lab's file: each must
raise AssertionError. The same reproducers beside solutions/<lab>/ must all run clean. One
interpreter runs all of a file's reproducers, each in its own namespace with the student's
module imported afresh (tests/reproducers_runner.py). The reports are the ones
tests/test_known_submissions.py graded, where both run in one session.
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


def run_beside(source: Path, lab: str, reproducers: dict[str, str], folder: Path
               ) -> dict[str, str]:
    """Each reproducer's outcome ("ok", "AssertionError", or another exception) run in one
    fresh interpreter, beside a copy of `source` named as the lab's file."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, folder / LAB_FILES[lab])
    (folder / "reproducers.json").write_text(json.dumps(reproducers))
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(RUNNER), str(folder / "reproducers.json"),
                           str(folder / "outcomes.json"), LAB_FILES[lab].removesuffix(".py")],
                          cwd=folder, env=environment, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    outcomes: dict[str, str] = json.loads((folder / "outcomes.json").read_text())
    return outcomes


@pytest.mark.slow
@pytest.mark.parametrize("path", MISTAKES, ids=[f"{p.parent.name}/{p.stem}" for p in MISTAKES])
def test_each_reproducer_fails_beside_its_mistake(path: Path, sandbox: Sandbox,
                                                  tmp_path: Path) -> None:
    lab = path.parent.name
    reproducers = reproducers_of(graded(path, sandbox))
    if not reproducers:
        pytest.skip("no failed check has a reproducer")
    assert not [line for code in reproducers.values() for line in self_reliance(code)]
    outcomes = run_beside(path, lab, reproducers, tmp_path)
    wrong = {name: outcome for name, outcome in outcomes.items() if outcome != "AssertionError"}
    assert not wrong, "\n\n".join(f"{name}: {outcome}\n{reproducers[name]}"
                                  for name, outcome in wrong.items())


@pytest.mark.slow
@pytest.mark.parametrize("lab", sorted({p.parent.name for p in MISTAKES}))
def test_every_reproducer_passes_beside_the_solution(lab: str, sandbox: Sandbox,
                                                     tmp_path: Path) -> None:
    reproducers = {f"{path.stem}: {name}": code for path in MISTAKES if path.parent.name == lab
                   for name, code in reproducers_of(graded(path, sandbox)).items()}
    unique = {code: name for name, code in reproducers.items()}  # many mistakes share one
    outcomes = run_beside(ROOT / "solutions" / lab / LAB_FILES[lab], lab,
                          {name: code for code, name in unique.items()}, tmp_path)
    wrong = {name: outcome for name, outcome in outcomes.items() if outcome != "ok"}
    assert not wrong, "\n\n".join(f"{name}: {outcome}\n{reproducers[name]}"
                                  for name, outcome in wrong.items())


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
    with pytest.raises(UsageError, match="did you mean sgd_step.same_storage"):
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
