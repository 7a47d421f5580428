"""Hidden cases: an instructor's file validated up front, graded like the lab's own cases,
counted in every score, and withheld from student feedback until released."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from grader.batch import BatchOptions, grade_class
from grader.checks.findings import Phrase, fail
from grader.engine import CheckOptions, check_submission, error_report
from grader.errors import UsageError
from grader.exporters.text import feedback_text
from grader.hidden import (
    HiddenFile,
    HiddenFileError,
    judging_checks,
    load_hidden_file,
    rename_case,
    resolve,
)
from grader.hidden import (
    released as released_by,
)
from grader.labs import LAB_FILES, get_lab
from grader.models import Limits, Report
from grader.views import STUDENT, View
from tests.conftest import SharedSandboxes, grader_cli

# Classes and commands graded here borrow their sandboxes
# (conftest.shared_batch_workers, shared_check_sandboxes).
pytestmark = pytest.mark.usefixtures("shared_batch_workers", "shared_check_sandboxes")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = {lab: ROOT / "examples" / lab / "hidden.toml" for lab in LAB_FILES}
TUNED = Path(__file__).parent / "hidden" / "sgd_step_tuned_to_public_lr.py"
LABS = sorted(LAB_FILES)


def hidden_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hidden.toml"
    path.write_text(text)
    return path


def grade(path: Path, lab: str, sandboxes: SharedSandboxes, hidden: HiddenFile | None
          ) -> Report:
    return check_submission(path, lab=lab, sandbox=sandboxes(lab),
                            options=CheckOptions(device="cpu", hidden=hidden))


# --- the file ----------------------------------------------------------------------------------

CASE = '[[case]]\nfunction = "sgd_step"\nlike = "float32"\nname = "h"\n'


@pytest.mark.parametrize(("text", "message"), [
    ('lab = "optim"\n' + CASE.replace('"sgd_step"', '"sgd"'), "no function 'sgd'"),
    ('lab = "optim"\n' + CASE.replace('"float32"', '"float16"'), "has no case 'float16'"),
    ('lab = "optim"\n' + CASE + 'set = { measure = "allocation" }\n', "cannot be changed"),
    ('lab = "optim"\n' + CASE + 'set = { momentum = 0.9 }\n', "set.momentum: unknown key"),
    ('lab = "optim"\n' + CASE + 'set = { lr = "big" }\n', "expected a value like 0.1"),
    ('lab = "optim"\n' + CASE + 'set = { dtype = "float8" }\n',
     "unknown dtype 'float8'; choose float32"),
    ('lab = "optim"\n' + CASE + 'set = { grads = ["normal"] }\n', "one kind per shape"),
    ('lab = "optim"\n' + CASE + CASE, "two cases are named 'h'"),
    ('lab = "optim"\nhide = ["sgd_step.nope*"]\n', "matches no check"),
    ('lab = "tensor_ops"\n', "written for lab 'tensor_ops'"),
    ('lab = "optim"\n[[case]]\nfunction = "SGD"\nlike = "trajectory.plain"\nname = "h"\n'
     'set = { config = { lr = 0.1, nesterov = true } }\n', "a correct SGD raises"),
    ('lab = "optim"\n[[case]]\nfunction = "SGD"\nlike = "validation.0"\nname = "h"\n'
     'set = { config = { lr = 0.5 } }\n', "the config is valid"),
])
def test_a_mistake_in_the_file_is_one_clear_error(tmp_path: Path, text: str,
                                                  message: str) -> None:
    path = hidden_file(tmp_path, text)
    with pytest.raises(HiddenFileError, match=None) as raised:
        resolve(get_lab("optim"), load_hidden_file(path))
    assert message in str(raised.value)
    assert str(path) in str(raised.value)


@pytest.mark.parametrize(("text", "message"), [
    ("lab = \n", "not valid TOML"),
    ('lab = "optim"\nsurprise = 1\n', "surprise: Extra inputs are not permitted"),
    ('lab = "optim"\n' + CASE.replace('"h"', '"a b"'), "case.0.name"),
])
def test_a_malformed_file_fails_to_load(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(HiddenFileError) as raised:
        load_hidden_file(hidden_file(tmp_path, text))
    assert message in str(raised.value)


@pytest.mark.parametrize("lab", LABS)
def test_every_case_is_judged_and_only_case_checks_judge_cases(lab: str) -> None:
    """What makes a hidden case gradable: each of the lab's cases, run alone, is judged by
    some check, and every check that judges cases (all but api and policy) judges one."""
    lab_obj = get_lab(lab)
    judged: set[str] = set()
    for function in lab_obj.functions:
        for case in lab_obj.cases(function):
            ids = judging_checks(lab_obj, function, case)
            assert ids, f"{function} case {case['id']} is judged by no check"
            judged.update(ids)
    unjudged = {c.id for c in lab_obj.checks} - judged
    assert unjudged == {c.id for c in lab_obj.checks if c.id.endswith(".signature")
                        or c.kind == "policy"}


# --- grading ------------------------------------------------------------------------------------

@pytest.mark.parametrize("lab", LABS)
def test_solution_earns_every_hidden_point_and_stub_none(lab: str,
                                                         sandboxes: SharedSandboxes) -> None:
    hidden = load_hidden_file(EXAMPLES[lab])
    plan = resolve(get_lab(lab), hidden)
    solution = grade(ROOT / "solutions" / lab / LAB_FILES[lab], lab, sandboxes, hidden)
    stub = grade(ROOT / "assignments" / lab / LAB_FILES[lab], lab, sandboxes, hidden)
    public = grade(ROOT / "solutions" / lab / LAB_FILES[lab], lab, sandboxes, None)
    hidden_checks = [c for c in solution.checks if "@" in c.id]
    assert len(hidden_checks) == sum(len(v.check_ids) for v in plan.variants)
    assert all(c.hidden and c.passed for c in hidden_checks)
    assert solution.score == solution.max_score > public.max_score
    assert stub.max_score == solution.max_score
    assert not [c for c in stub.checks if c.hidden and c.passed], "a stub earns nothing hidden"
    withheld = {c.id for c in solution.checks if c.hidden and "@" not in c.id}
    assert withheld == set(plan.withheld)


def test_a_submission_tuned_to_the_visible_cases_fails_only_hidden_checks(
        sandboxes: SharedSandboxes, tmp_path: Path) -> None:
    public = grade(TUNED, "optim", sandboxes, None)
    assert not [c for c in public.checks if c.function == "sgd_step" and c.status == "failed"]
    hidden = load_hidden_file(EXAMPLES["optim"])
    report = grade(TUNED, "optim", sandboxes, hidden)
    failed = [c for c in report.checks if c.function == "sgd_step" and c.status == "failed"]
    assert [c.id for c in failed] == ["sgd_step.values@large_lr"]
    assert "lr=1.5" in failed[0].message
    points = get_lab("optim").rubric().points["sgd_step.values"]
    assert failed[0].max_score == 0.5 * points  # the case's weight times the check's points


@pytest.mark.slow
def test_hidden_points_count_when_a_submission_dies_or_is_missing(
        sandboxes: SharedSandboxes, tmp_path: Path) -> None:
    """max_score is the same for every student, and so is the part a student is shown: the
    points of hidden cases stay hidden when the code never ran."""
    hidden = load_hidden_file(EXAMPLES["optim"])
    full = grade(ROOT / "solutions" / "optim" / "optimizer.py", "optim", sandboxes, hidden)
    shown = STUDENT.of(full).report.max_score
    assert 0 < shown < full.max_score
    dies = tmp_path / "optimizer.py"
    dies.write_text("import os\nos._exit(3)\n")
    died = grade(dies, "optim", sandboxes, hidden)
    assert died.max_score == full.max_score and died.score == 0
    assert STUDENT.of(died).report.max_score == shown
    assert f"/ {shown:g} points shown" in feedback_text(died, lang="en")
    hangs = tmp_path / "hangs" / "optimizer.py"
    hangs.parent.mkdir()
    source = (ROOT / "solutions" / "optim" / "optimizer.py").read_text()
    hangs.write_text(source.replace('def sgd_step(params: Iterable[torch.Tensor], lr: float)'
                                    ' -> None:\n',
                                    'def sgd_step(params: Iterable[torch.Tensor], lr: float)'
                                    ' -> None:\n    while True:\n        pass\n', 1))
    assert "while True" in hangs.read_text()
    hung = check_submission(hangs, lab="optim", sandbox=sandboxes("optim"), options=CheckOptions(
        device="cpu", hidden=hidden, limits=Limits(timeout_s=2)))
    rows = {c.id: c for c in hung.checks if c.function == "sgd_step" and c.status != "skipped"}
    assert set(rows) == {"sgd_step.runtime", "sgd_step.runtime@hidden"}
    sgd = [c for c in full.checks if c.function == "sgd_step"]
    assert not rows["sgd_step.runtime"].hidden and rows["sgd_step.runtime@hidden"].hidden
    assert rows["sgd_step.runtime"].max_score == sum(c.max_score for c in sgd if not c.hidden)
    assert rows["sgd_step.runtime@hidden"].max_score == sum(c.max_score for c in sgd if c.hidden)
    assert hung.max_score == full.max_score
    assert STUDENT.of(hung).report.max_score == shown
    missing = error_report(lab="optim", submission="x", error="empty",
                           options=CheckOptions(device="cpu", hidden=hidden))
    assert missing.max_score == full.max_score
    assert STUDENT.of(missing).report.max_score == shown
    assert f"/ {shown:g} points shown" in feedback_text(missing, lang="en")
    released = feedback_text(missing, lang="en", view=View(release=True))
    assert f"/ {full.max_score:g} points" in released


# --- what students see --------------------------------------------------------------------------

def test_feedback_withholds_hidden_results_until_released(sandboxes: SharedSandboxes) -> None:
    hidden = load_hidden_file(EXAMPLES["optim"])
    report = grade(TUNED, "optim", sandboxes, hidden)
    withheld = feedback_text(report, lang="en")
    assert "hidden case" not in withheld and "lr=1.5" not in withheld
    assert "Adam matches torch.optim.Adam at every step: small gradients" not in withheld
    count = sum(c.hidden for c in report.checks)
    points = sum(c.max_score for c in report.checks if c.hidden)
    assert f"{count} hidden checks ({points:g} points) are graded but not shown" in withheld
    visible_max = report.max_score - points
    assert f"/ {visible_max:g} points shown" in withheld
    released = feedback_text(report, lang="en", view=View(release=True))
    assert "sgd_step computes p - lr * p.grad (hidden case large_lr)" in released
    assert f"/ {report.max_score:g} points" in released
    assert "graded but not shown" not in released


def test_batch_release_rewrites_feedback_without_regrading(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "tuned.py").write_text(TUNED.read_text())
    out = tmp_path / "out"
    hidden = load_hidden_file(EXAMPLES["optim"])

    def options(**kwargs) -> BatchOptions:
        check = CheckOptions(device="cpu", lang="en", hidden=kwargs.pop("hidden", hidden))
        return BatchOptions(lab="optim", out=out, workers=1, check=check, **kwargs)

    first = grade_class(subs, options=options())
    assert first.graded == 1
    feedback = (out / "feedback" / "tuned.txt").read_text()
    assert "graded but not shown" in feedback and "large_lr" not in feedback
    report = Report.model_validate_json((out / "reports" / "tuned.json").read_text())
    assert any(c.id == "sgd_step.values@large_lr" and not c.passed for c in report.checks)
    book = (out / "gradebook.csv").read_text()
    assert f",{report.score:g},{report.max_score:g}," in book  # instructors see everything

    released = grade_class(subs, options=options(release=True))
    assert released.reused == 1 and released.graded == 0
    assert "large_lr" in (out / "feedback" / "tuned.txt").read_text()

    # `release = true` written in the file is the same decision: no regrading either.
    in_file = hidden.model_copy(update={"release": True})
    again = grade_class(subs, options=options(hidden=in_file, release=released_by(in_file)))
    assert again.reused == 1 and again.graded == 0
    assert "large_lr" in (out / "feedback" / "tuned.txt").read_text()

    with pytest.raises(UsageError, match="graded with --hidden cases, which this run would "
                                         "drop; pass the same --hidden FILE, or --force"):
        grade_class(subs, options=options(hidden=None))  # the hidden results would be lost
    without = grade_class(subs, options=options(hidden=None, force=True))
    assert without.graded == 1, "no hidden file, when forced, regrades"


def test_the_command_line_takes_hidden_and_release(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "tuned.py").write_text(TUNED.read_text())
    bad = hidden_file(tmp_path, 'lab = "optim"\n' + CASE.replace('"float32"', '"nope"'))
    run = grader_cli("grade", str(subs), "--lab", "optim", "--out", str(tmp_path / "out"),
                     "--hidden", str(bad))
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert "has no case 'nope'" in run.stderr
    assert not (tmp_path / "out").exists(), "nothing graded with a broken hidden file"
    run = grader_cli("grade", str(subs), "--lab", "optim", "--out", str(tmp_path / "out"),
                     "--device", "cpu", "--hidden", str(EXAMPLES["optim"]), "--release")
    assert run.returncode == 0, run.stderr
    assert "large_lr" in (tmp_path / "out" / "feedback" / "tuned.txt").read_text()


def test_renaming_a_case_changes_only_the_parameters_that_name_it() -> None:
    """optim's case ids are dtype names: the dtype in a message must survive the rename."""
    finding = fail("values_mismatch", function="sgd_step", case="float32", dtype="float32",
                   where=Phrase("error_case", {"case": "float32", "dtype": "float32"}))
    renamed = rename_case(finding, "float32", "large_lr")
    assert renamed.params["case"] == "large_lr" and renamed.params["dtype"] == "float32"
    assert renamed.params["where"].params == {"case": "large_lr", "dtype": "float32"}
    assert rename_case(finding, "float64", "x").params == finding.params


# --- hidden cases out of the visible child's reach ----------------------------------------------

SPY = '''

def zero_grad(params, set_to_none=False):
    raise RuntimeError(f"shapes={[tuple(p.shape) for p in params]}")
'''


def test_a_visible_child_never_holds_a_hidden_case_and_its_words_stay_visible(
        tmp_path: Path, sandboxes: SharedSandboxes) -> None:
    """The lab's cases and the hidden ones run in separate children: what a visible check
    says cannot hold a hidden case, and the hidden child's words are withheld with it."""
    path = tmp_path / "optimizer.py"
    path.write_text((ROOT / "solutions" / "optim" / "optimizer.py").read_text() + SPY)
    hidden = load_hidden_file(EXAMPLES["optim"])  # zero_grad_float64 has shapes [9], [3, 3]
    report = grade(path, "optim", sandboxes, hidden)
    visible = " ".join(f"{c.message} {c.got} {c.debug}" for c in report.checks if not c.hidden)
    secret = " ".join(c.message + c.got + c.debug for c in report.checks if c.hidden
                      and c.function == "zero_grad")
    # A traceback's `File "/tmp/..."` paths are random and could hold the digits: not words.
    words = re.sub(r'File "[^"]*"', 'File ""', visible)
    assert "shapes=" in words and "(9,)" not in words and "4242" not in words
    assert "(9,)" in secret  # the hidden child saw its own case, and said so only there
    view = feedback_text(report, lang="en")
    assert "(9,)" not in view and "momentum_float64" not in view


def test_hidden_cases_travel_in_a_private_file_not_in_the_job(tmp_path: Path) -> None:
    from grader.sandbox.runner import TaskSpec, _task

    # A seed no temporary path can hold (pytest numbers its folders: pytest-177 held "77").
    seed = 918_273_645
    spec = TaskSpec("sgd_step", "cpu", [{"id": "hidden.large_lr", "seed": seed}], private=True)
    task = _task(spec, tmp_path, 0)
    job = task.model_dump_json()
    assert task.cases == [] and str(seed) not in job and "large_lr" not in job
    assert Path(task.cases_path).stat().st_mode & 0o777 == 0o600
    assert str(seed) in Path(task.cases_path).read_text()


class HiddenImportsAnother:
    """A sandbox whose hidden job imports `other` instead of the submission: the import that
    misbehaves only in the hidden cases' own child, as code that reads the clock could."""

    def __init__(self, sandbox: Any, other: Path) -> None:
        self.sandbox, self.other = sandbox, other

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sandbox, name)

    def run_job(self, *, tasks: list[Any], submission: Path, **kwargs: Any) -> Any:
        private = any(task.private for task in tasks)
        return self.sandbox.run_job(tasks=tasks, submission=self.other if private
                                    else submission, **kwargs)


@pytest.mark.slow
@pytest.mark.parametrize(("top_level", "said"), [
    ("while True:\n    pass\n", "did not finish importing within 2 s"),
    ("while True:\n    print('x' * 4096)\n", "printed more than 1 MiB"),
])
def test_a_hang_or_a_flood_at_the_hidden_import_is_told_as_the_imports(
        sandboxes: SharedSandboxes, tmp_path: Path, top_level: str, said: str) -> None:
    """Each hidden row says what the import did, not that its function timed out or raised
    OSError; the visible rows are untouched."""
    hidden = load_hidden_file(EXAMPLES["optim"])
    solution = ROOT / "solutions" / "optim" / "optimizer.py"
    other = tmp_path / "other.py"
    other.write_text(solution.read_text() + "\n" + top_level)
    sandbox = sandboxes("optim")
    target = sandbox.new_submission_file(other.read_text())
    limits = Limits(timeout_s=2, file_size_bytes=1024**2)
    try:
        report = check_submission(solution, lab="optim", sandbox=HiddenImportsAnother(
            sandbox, target), options=CheckOptions(device="cpu", hidden=hidden, limits=limits))
    finally:
        sandbox.discard(target)
    hidden_rows = [c for c in report.checks if c.id.endswith(".runtime@hidden")]
    assert len(hidden_rows) == len({case.function for case in hidden.cases})
    assert all(c.status == "failed" for c in hidden_rows), [(c.id, c.status, c.message)
                                                              for c in hidden_rows]
    assert all(said in c.message and "import" in c.message and "top level" in c.hint
               for c in hidden_rows), [
        (c.message, c.hint) for c in hidden_rows]
    assert all(c.status == "passed" for c in report.checks
               if "@" not in c.id and c.status != "skipped")
