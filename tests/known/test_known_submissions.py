"""The grader graded: every named submission gets exactly its expected verdicts.

Each `tests/submissions/<lab>/<name>.py` has `<name>.toml` beside it:

    why = "one line: the idiom or mistake this file stands for"
    fails = [["sgd_step", "allocation"], ...]   # (function, kind) pairs that must fail, on CPU
    points = {sgd_step = 3}                      # optional: what a function earns in all
    said = ["..."]                               # optional: text its failed checks show
    unsaid = ["..."]                             # optional: text they must not show
    fix = ["..."]                                # optional: key words of the fix its hints name

An empty `fails` is a correct alternative idiom: it must get full marks.
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path
from unittest import mock

import pytest

import grader.engine.api as engine_api
from grader.engine import CheckOptions, check_submission
from grader.engine.context import GradingContext
from grader.engine.observe import Observed, observe
from grader.labs import LAB_FILES, get_lab
from grader.models import CheckResult, Report
from grader.sandbox import Sandbox
from grader.submission import Submission
from tests.conftest import ROOT, SharedSandboxes

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SUBMISSIONS = ROOT / "tests" / "submissions"
CASES = sorted(SUBMISSIONS.glob("*/*.py"))
LABS = sorted({p.parent.name for p in CASES})


def on_one_worker(lab: str) -> pytest.MarkDecorator:
    """A lab's files and the tests over all of them run on one xdist worker, which grades each
    file once (`graded`); the labs spread over the workers."""
    return pytest.mark.xdist_group(f"known-{lab}")


def expectation(path: Path) -> dict:
    with path.with_suffix(".toml").open("rb") as handle:
        data = tomllib.load(handle)
    assert data.get("why"), f"{path.with_suffix('.toml')} needs a `why`"
    return data


def expected_failures(path: Path) -> set[tuple[str, str]]:
    return {(function, kind) for function, kind in expectation(path)["fails"]}


_REPORTS: dict[tuple[Path, str], Report] = {}
_OBSERVED: dict[Path, Observed] = {}


def graded(path: Path, sandboxes: SharedSandboxes, lang: str = "en") -> Report:
    """Each file graded once per language, in its lab's shared sandbox (as `grade` grades a
    class). The sandbox runs each file once: what it observed does not depend on the language
    the report is worded in, so the Korean report judges and words the same observation (a
    copy each time: judging puts what the grading process measured into the records)."""
    if (path, lang) not in _REPORTS:
        def observe_once(sandbox: Sandbox, context: GradingContext,
                         submission: Submission) -> Observed:
            if path not in _OBSERVED:
                _OBSERVED[path] = observe(sandbox, context, submission)
            return copy.deepcopy(_OBSERVED[path])

        with mock.patch.object(engine_api, "observe", observe_once):
            _REPORTS[path, lang] = check_submission(
                path, lab=path.parent.name, options=CheckOptions(device="cpu", lang=lang),
                sandbox=sandboxes(path.parent.name))
    return _REPORTS[path, lang]


@pytest.mark.parametrize("path", [
    pytest.param(p, id=f"{p.parent.name}/{p.stem}", marks=on_one_worker(p.parent.name))
    for p in CASES])
def test_submission_gets_expected_verdicts(path: Path, sandboxes: SharedSandboxes) -> None:
    report = graded(path, sandboxes)
    failed = {(c.function, c.kind) for c in report.checks if c.status == "failed"}
    assert failed == expected_failures(path), "\n".join(
        f"{c.id}: {c.message}" for c in report.checks if c.status == "failed")
    if not failed:
        assert report.score == report.max_score > 0
    want = expectation(path)
    for function, points in want.get("points", {}).items():
        earned = sum(c.score for c in report.checks if c.function == function)
        assert earned == points, (function, earned, [
            f"{c.id}: {c.status}" for c in report.checks if c.function == function])
    text = "\n".join(f"{c.message} {c.expected} {c.got} {c.hint}" for c in report.checks
                     if c.status == "failed")
    for words in want.get("said", []):
        assert words in text, text
    for words in want.get("unsaid", []):
        assert words not in text, text


@pytest.mark.parametrize("lab", [pytest.param(lab, marks=on_one_worker(lab))
                                 for lab in sorted(LAB_FILES)])
def test_every_check_is_failed_by_a_mistake_and_passed_by_an_alternative(
        lab: str, sandboxes: SharedSandboxes) -> None:
    """A check no submission fails cannot be trusted to fail; one no idiom passes is too strict.
    Every lab, so a lab without known submissions (tests/submissions/<lab>/) fails here."""
    failed_by: dict[str, list[str]] = {}
    passed_by_alternative: set[str] = set()
    for path in (p for p in CASES if p.parent.name == lab):
        report = graded(path, sandboxes)
        for check in report.checks:
            if check.status == "failed":
                failed_by.setdefault(check.id, []).append(path.stem)
            elif check.status == "passed" and not expected_failures(path):
                passed_by_alternative.add(check.id)
    ids = {check.id for check in get_lab(lab).checks}
    never_failed = sorted(ids - set(failed_by))
    assert never_failed == [], f"checks that no known mistake fails: {never_failed}"
    never_passed = sorted(ids - passed_by_alternative)
    assert never_passed == [], f"checks that no correct idiom passes: {never_passed}"


# Words that belong to one lab's functions only: another lab's feedback never uses them.
OPTIM_WORDS = [r"p\.grad", r"\blr\b", r"alpha=-lr", r"`p`", r"\bp\.data\b", r"\bp\.add_",
               r"the parameter\b", r"\boptimizer\b"]
FOREIGN_WORDS = {
    "optim": [r"`x`", r"`t`", r"\bx\.", r"\brelu_", r"\bsoftmax_", r"\bleaf\."],
    "tensor_ops": [*OPTIM_WORDS, r"\bleaf\b", r"`t`"],
    "autograd": OPTIM_WORDS,
    "modules": [r"p\.grad", r"\blr\b", r"alpha=-lr", r"`x`", r"\brelu_", r"\bsoftmax_",
                r"\bleaf\."],
}


@pytest.mark.parametrize("lab", [pytest.param(lab, marks=on_one_worker(lab)) for lab in LABS])
def test_feedback_speaks_only_of_its_own_lab(lab: str, sandboxes: SharedSandboxes) -> None:
    """Every failed check of every known mistake of `lab` is worded in that lab's names: no
    `p.grad` or `lr` hint for a tensor_ops function, no `x` for an optimizer."""
    foreign = re.compile("|".join(FOREIGN_WORDS[lab]))
    strays = []
    for path in (p for p in CASES if p.parent.name == lab and expected_failures(p)):
        for check in graded(path, sandboxes).checks:
            if check.status != "failed" or check.kind == "runtime":
                continue
            # An exception's own text (torch's words, quoted) is not the grader's.
            quoted = " raised " in check.message
            for text in ([] if quoted else [check.message, check.got]) + [check.expected,
                                                                          check.hint]:
                if found := foreign.search(text):
                    strays.append(f"{path.stem} {check.id}: {found.group()!r} in {text!r}")
    assert not strays, "\n".join(strays[:20])


# Issue 30: every message fair and exact.

FIXES = [p for p in CASES if "fix" in expectation(p)]


@pytest.mark.parametrize("path", [
    pytest.param(p, id=f"{p.parent.name}/{p.stem}", marks=on_one_worker(p.parent.name))
    for p in FIXES])
def test_hints_name_the_fix(path: Path, sandboxes: SharedSandboxes) -> None:
    """A known mistake's hints, together, name each key word of its fix (its toml's `fix`):
    `y += alpha * x` is told of `alpha=`, not only of "in-place methods"."""
    report = graded(path, sandboxes)
    # A file that does not import is told once, in the report's import block.
    hints = "\n".join([c.hint for c in report.checks if c.status == "failed"]
                      + ([report.import_error.hint] if report.import_error else []))
    missing = [word for word in expectation(path)["fix"] if word not in hints]
    assert not missing, f"hints name none of {missing}:\n{hints}"


def exactness_problems(check: CheckResult) -> list[str]:
    """What keeps a failed check's words from naming the student's function and tensor: no
    function named, a tensor named by the grader's internals (`x._base`), a bare Python type
    for what was got ("Tensor"), a plural for one ("1 full-size temporaries")."""
    problems = []
    text = "\n".join((check.message, check.expected, check.got, check.hint))
    names = {check.function, check.function.split(".")[0]}
    if not any(name in check.message for name in names):
        problems.append(f"message names no function ({check.function}): {check.message!r}")
    if "_base" in text:
        problems.append(f"`_base` in {text!r}")
    if re.fullmatch(r"(Tensor|NoneType|list|tuple|dict|int|float|bool|str)", check.got):
        problems.append(f"bare type for got: {check.got!r}")
    if re.search(r"\b1 [\w-]+ temporaries\b", text):
        problems.append(f"plural for one: {text!r}")
    return problems


@pytest.mark.slow
@pytest.mark.parametrize("lab", [pytest.param(lab, marks=on_one_worker(lab)) for lab in LABS])
def test_every_failure_names_its_function_and_tensor(lab: str,
                                                     sandboxes: SharedSandboxes) -> None:
    """Every failed check of every known mistake names its function (its class for a
    method), the tensor as the student passed it, and what it got in words."""
    found = [f"{path.stem} {check.id}: {problem}"
             for path in CASES if path.parent.name == lab and expected_failures(path)
             for check in graded(path, sandboxes).checks if check.status == "failed"
             for problem in exactness_problems(check)]
    assert not found, "\n".join(found[:20])


# What may stay in Latin letters in Korean feedback outside code spans: torch's and Python's
# names and terms of art (in-place, out-of-place, leaf, storage, as the Korean PyTorch docs
# keep them), parameter names, units.
LATIN_NAMES = {
    "torch", "adam", "sgd", "nan", "inf", "relu", "none", "true", "false", "python", "numpy",
    "autograd", "aten", "docstring", "dtype", "shape", "storage", "grad", "leaf", "view",
    "float", "atol", "rtol", "in-place", "out-of-place", "import", "debug", "gradcheck",
    "backward", "forward", "optim", "momentum", "nesterov", "dampening", "maximize", "betas",
    "step", "state", "reshape", "detach", "clone", "eps", "decay", "tensor", "gradient",
    "jacobian", "bool", "dict", "list", "tuple", "sigkill", "sigxcpu", "delta", "value",
    "alpha", "avg", "new", "dim", "params", "non-leaf", "buggy_block", "matmul", "sigmoid", "exp",
    "logsumexp", "median", "layer_norm", "keepdim", "profiler", "contiguous", "cuda", "cpu",
}


def english_left(text: str, names: set[str]) -> list[str]:
    """Latin words of three letters or more in `text` that a Korean reader should not meet:
    outside code spans (`...`), identifiers (with `_`, `.`, `(`, `::` or a digit), exception
    type and class names (CamelCase), quoted torch text, `names` (the lab's functions) and the
    names above."""
    if not re.search("[가-힣]", text) and len(re.findall("[A-Za-z]+", text)) >= 5:
        return []  # a quoted message: an exception's text, or a line of the student's code
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r":\s[^가-힣]*$", " ", text)  # an exception's own message, quoted at the end
    text = re.sub(r"(번째 줄|line \d+) \(.*\)", " ", text)  # a line of the student's code
    text = re.sub(r"\S*[_.():\[\d]\S*", " ", text)
    words = re.findall(r"[A-Za-z][A-Za-z\-]{2,}", text)
    return [word for word in words if word.lower() not in LATIN_NAMES and word not in names
            and not re.search("[a-z][A-Z]", word)]


@pytest.mark.slow
@pytest.mark.parametrize("lab", [pytest.param(lab, marks=on_one_worker(lab)) for lab in LABS])
def test_korean_feedback_has_no_english_left(lab: str, sandboxes: SharedSandboxes) -> None:
    """In `--lang ko`, every failed check's message, expected, got and hint of every known
    mistake is Korean but for code, names and the text of an exception torch raised."""
    found = []
    for path in (p for p in CASES if p.parent.name == lab and expected_failures(p)):
        report = graded(path, sandboxes, lang="ko")
        english = graded(path, sandboxes)
        assert [(c.id, c.device, c.status, c.score) for c in report.checks] == [
            (c.id, c.device, c.status, c.score) for c in english.checks], path.stem
        names = {part for check in report.checks for part in check.function.split(".")}
        for check in report.checks:
            if check.status != "failed":
                continue
            for field in ("message", "expected", "got", "hint"):
                text = getattr(check, field)
                if words := english_left(text, names):
                    found.append(f"{path.stem} {check.id} {field}: {words} in {text!r}")
    assert not found, "\n".join(found[:30])
