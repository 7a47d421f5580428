"""Gradescope: the built zip, run as Gradescope runs it, against a fake /autograder root.

`run_autograder` is executed with bash, with AUTOGRADER_ROOT pointing at a temporary folder and
INPLACE_GRADER_PYTHON at this interpreter (where the grader is installed); the other uploads go
through the command it runs, `gradescope run`, in this process. Every results.json is validated
against the JSON Schema of Gradescope's documented fields.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from grader import __version__
from grader.models import CheckResult, Report
from grader.platforms.gradescope.results import results_json
from tests.conftest import ROOT, SOLUTION, grader_cli

# Commands run in this process borrow their sandbox (conftest.shared_check_sandboxes).
pytestmark = pytest.mark.usefixtures("shared_check_sandboxes")

SCHEMA = json.loads((Path(__file__).with_name("gradescope_results.schema.json")).read_text())
HIDDEN = ROOT / "examples" / "optim" / "hidden.toml"
KNOWN = ROOT / "tests" / "submissions" / "optim"


cli = grader_cli


@pytest.fixture(scope="module")
def autograder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("build") / "autograder.zip"
    result = cli("gradescope", "build", "--lab", "optim", "--hidden", str(HIDDEN),
                 "--timeout", "3", "-o", str(out))
    assert result.returncode == 0, result.stderr
    return out


def lay_out(autograder: Path, root: Path, files: dict[str, str]) -> None:
    """/autograder as Gradescope lays it out: the zip in source/, the upload in submission/."""
    with zipfile.ZipFile(autograder) as archive:
        archive.extractall(root / "source")
    (root / "submission").mkdir(parents=True)
    for name, text in files.items():
        (root / "submission" / name).write_text(text)


def valid(results_file: Path) -> dict:
    results = json.loads(results_file.read_text())
    jsonschema.validate(results, SCHEMA)
    return results


def run_autograder(autograder: Path, root: Path, files: dict[str, str],
                   python: str = sys.executable) -> dict:
    """Lay out /autograder as Gradescope does, run run_autograder, return results.json."""
    lay_out(autograder, root, files)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "INPLACE_GRADER_PYTHON": python}
    run = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return valid(root / "results" / "results.json")


def grade_in_process(autograder: Path, root: Path, files: dict[str, str]) -> dict:
    """The command run_autograder runs, `gradescope run`, in this process (conftest.grader_cli,
    with a shared sandbox): what a submission earns, without a Python start per upload. The
    script itself runs for the correct submission and where the grader cannot start."""
    lay_out(autograder, root, files)
    (root / "results").mkdir()
    ran = cli("gradescope", "run", "--root", str(root),
              "--config", str(root / "source" / "inplace-grader.toml"))
    assert ran.returncode == 0, ran.stderr
    return valid(root / "results" / "results.json")


def scored(results: dict) -> list[dict]:
    """The tests that carry points (the others are informational entries)."""
    return [t for t in results["tests"] if "max_score" in t]


def test_the_zip_has_gradescopes_layout(autograder: Path) -> None:
    with zipfile.ZipFile(autograder) as archive:
        names = set(archive.namelist())
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in archive.infolist()}
        config = archive.read("inplace-grader.toml").decode()
        setup = archive.read("setup.sh").decode()
    wheel = f"inplace_grader-{__version__}-py3-none-any.whl"
    assert names == {"setup.sh", "run_autograder", "inplace-grader.toml", "hidden.toml", wheel}
    assert modes["setup.sh"] == modes["run_autograder"] == 0o755
    assert 'lab = "optim"' in config and 'hidden = "hidden.toml"' in config
    assert 'torch==2.' in setup and "download.pytorch.org/whl/cpu" in setup
    assert f'pip install -q "/autograder/source/{wheel}"' in setup
    with zipfile.ZipFile(autograder) as archive, \
            zipfile.ZipFile(io.BytesIO(archive.read(wheel))) as packed:
        files = set(packed.namelist())
    assert {"grader/__init__.py", "grader/labs/optim/rubric.toml", "grader/locales/en.toml",
            f"inplace_grader-{__version__}.dist-info/RECORD"} <= files
    # See NOTE: [no solutions in a shipped wheel] (grader/distribution.py)
    assert not [n for n in files if "__pycache__" in n or "solutions/" in n]
    for script in ("setup.sh", "run_autograder"):
        text = zipfile.ZipFile(autograder).read(script)
        check = subprocess.run(["bash", "-n"], input=text, capture_output=True)
        assert check.returncode == 0, check.stderr


@pytest.mark.cli_subprocess
def test_a_correct_submission_gets_every_point(autograder: Path, tmp_path: Path) -> None:
    results = run_autograder(autograder, tmp_path, {"optimizer.py": SOLUTION.read_text()})
    assert results["score"] == sum(t["max_score"] for t in scored(results)) > 0
    assert all(t["status"] == "passed" and t["output"] == "" for t in scored(results))
    hidden = [t for t in scored(results) if t["visibility"] == "after_published"]
    assert hidden and all("hidden case" in t["name"] or "small gradients" in t["name"]
                          for t in hidden)
    assert "optim: " in results["output"]
    visible = sum(t["max_score"] for t in scored(results) if t["visibility"] == "visible")
    assert f"/ {visible:g} points shown" in results["output"], "hidden totals stay unshown"
    # The total counts hidden checks: it is shown when they are, the visible tests at once.
    assert results["visibility"] == "after_published"
    assert results["output_format"] == results["test_output_format"] == "md"
    informational = [t for t in results["tests"] if "max_score" not in t]
    assert all("score" not in t and t["status"] == "passed" for t in informational)
    protections = [t for t in informational if t["tags"] == ["sandbox"]]
    assert protections and "- separate process" in protections[0]["output"]


def test_a_buggy_submission_is_explained(autograder: Path, tmp_path: Path) -> None:
    source = (KNOWN / "sgd_step_data_assign.py").read_text()
    results = grade_in_process(autograder, tmp_path, {"my_optimizer.py": source})
    failed = [t for t in scored(results) if t["status"] == "failed"]
    assert failed and all(t["score"] == 0 and t["output"] for t in failed)
    assert {t["tags"][0] for t in failed} == {"sgd_step"}
    assert all(t["output_format"] == "md" for t in failed)
    # Markdown paragraphs: the message, expected, got, the hint; then the reproducer, if any.
    message, expected, got, hint, *reproducer = failed[0]["output"].split("\n\n")
    assert message and got.startswith("**got:** ")
    assert expected.startswith("**expected:** `") and hint.startswith("**hint:** ")
    code = "\n\n".join(reproducer[1:])  # a code block holds blank lines of its own
    assert reproducer[0].startswith("**") and code.startswith("```python") and code.endswith("```")
    assert results["score"] == sum(t["score"] for t in scored(results))


def test_a_crash_at_import_scores_zero_with_the_reason(autograder: Path, tmp_path: Path) -> None:
    crash = {"optimizer.py": "import os\nos._exit(3)\n"}
    results = grade_in_process(autograder, tmp_path, crash)
    assert results["score"] == 0
    assert scored(results) and all(t["status"] == "failed" for t in scored(results))
    assert all("did not import" in t["output"] for t in scored(results))
    assert results["output"].count("ended the Python process") == 1  # told once, on top


@pytest.mark.slow  # waits out the limit twice (the visible and the hidden cases)
def test_a_timeout_costs_that_function_and_is_said(autograder: Path, tmp_path: Path) -> None:
    source = SOLUTION.read_text().replace(
        "def sgd_step(params: Iterable[torch.Tensor], lr: float) -> None:\n",
        "def sgd_step(params: Iterable[torch.Tensor], lr: float) -> None:\n"
        "    while True:\n        pass\n", 1)
    assert "while True" in source
    results = grade_in_process(autograder, tmp_path, {"optimizer.py": source})
    runtime = {t["extra_data"]["id"]: t for t in scored(results)
               if t["tags"] == ["sgd_step", "runtime"]}
    assert set(runtime) == {"sgd_step.runtime", "sgd_step.runtime@hidden"}
    assert "3 s" in runtime["sgd_step.runtime"]["output"]
    # The hidden cases' points sit in a row students see only once published.
    assert runtime["sgd_step.runtime"].get("visibility", "visible") == "visible"
    assert runtime["sgd_step.runtime@hidden"]["visibility"] == "after_published"
    assert 0 < results["score"] < sum(t["max_score"] for t in scored(results))


@pytest.mark.parametrize(("files", "message"), [
    ({}, "no optimizer.py in your submission"),
    ({"a.py": "x = 1\n", "b.py": "y = 2\n"}, "several files were uploaded (a.py, b.py)"),
])
def test_a_wrong_upload_still_writes_results(autograder: Path, tmp_path: Path,
                                            files: dict[str, str], message: str) -> None:
    results = grade_in_process(autograder, tmp_path, files)
    assert results["score"] == 0 and scored(results) == []
    assert message in results["output"]
    assert "optim: 0 / " in results["output"]  # out of what the assignment is worth


def test_results_are_written_even_when_the_grader_cannot_start(autograder: Path,
                                                               tmp_path: Path) -> None:
    results = run_autograder(autograder, tmp_path, {"optimizer.py": SOLUTION.read_text()},
                             python="/bin/false")
    assert results["score"] == 0 and "could not start (exit 1)" in results["output"]


def test_build_refuses_a_broken_hidden_file_and_an_existing_zip(tmp_path: Path) -> None:
    bad = tmp_path / "hidden.toml"
    bad.write_text('lab = "optim"\n[[case]]\nfunction = "SGD"\nlike = "nope"\nname = "x"\n')
    result = cli("gradescope", "build", "--lab", "optim", "--hidden", str(bad),
                 "-o", str(tmp_path / "a.zip"))
    assert result.returncode == 2 and "has no case 'nope'" in result.stderr
    assert not (tmp_path / "a.zip").exists()
    (tmp_path / "b.zip").write_text("keep me")
    result = cli("gradescope", "build", "--lab", "optim", "-o", str(tmp_path / "b.zip"))
    assert result.returncode == 2 and "--force" in result.stderr
    assert (tmp_path / "b.zip").read_text() == "keep me"


def test_check_prints_gradescope_results_for_one_submission() -> None:
    result = cli("check", str(SOLUTION), "--format", "gradescope", "--device", "cpu")
    assert result.returncode == 0, result.stderr
    results = json.loads(result.stdout)
    jsonschema.validate(results, SCHEMA)
    assert results["score"] == sum(t["max_score"] for t in scored(results)) > 0
    assert results["visibility"] == "visible"  # no hidden cases: nothing waits


def test_skipped_devices_are_said_not_scored() -> None:
    report = Report(lab="optim", submission="optimizer.py", score=1, max_score=1, checks=[
        CheckResult(id="zero_grad.identity", name="keeps the .grad tensors", function="zero_grad",
                    kind="identity", device=device, status=status, passed=status == "passed",
                    score=points, max_score=points, message=message)
        for device, status, points, message in (("cpu", "passed", 1, ""),
                                                ("cuda", "skipped", 0, "no CUDA device"))],
        grader_version="0", torch_version="0", elapsed_s=0.1)
    results = results_json(report)
    jsonschema.validate(results, SCHEMA)
    (skipped,) = [t for t in results["tests"] if "skipped" in t.get("tags", [])]
    assert "cuda" in skipped["name"] and "1 checks for cuda" in skipped["output"]
    assert "score" not in skipped and len(scored(results)) == 1


def test_what_the_submission_wrote_cannot_format_the_page() -> None:
    """Rendered by a real markdown renderer (mistune, with its URL autolinks on): a student's
    text stays text, whatever markdown, HTML, links or line starts it holds."""
    mistune = pytest.importorskip("mistune")
    render = mistune.create_markdown(plugins=["url", "strikethrough", "table"])
    hostile = ("*bold* <script>alert(1)</script> [link](http://x) ![i](http://x/i.png) "
               "https://evil.example/claim www.evil.example ~~gone~~ `tick`\n===\n- item")
    report = Report(lab="optim", submission="optimizer.py", score=0, max_score=1, checks=[
        CheckResult(id="sgd_step.values", name="updates the values", function="sgd_step",
                    kind="numerics", device="cpu", status="failed", passed=False, score=0,
                    max_score=1, message=hostile, expected="a `b` c", got="<b>x</b>",
                    hint="1. use *add_*")],
        grader_version="0", torch_version="0", elapsed_s=0.1)
    (test,) = scored(results_json(report))
    html = render(test["output"])
    for tag in ("<a ", "<img", "<script", "<em>", "<del>", "<h1", "<ul", "<ol", "<b>"):
        assert tag not in html, tag
    message, expected, got, hint = re.findall(r"<p>(.*?)</p>", html, re.S)  # one paragraph each
    assert set(re.findall(r"</?(\w+)", message)) == {"code"}  # only the URLs, as code
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in message  # shown, as text
    assert "<code>https://evil.example/claim</code>" in message  # never a link
    assert expected.endswith("<code>a `b` c</code>") and got.endswith(
        "<code>&lt;b&gt;x&lt;/b&gt;</code>")
    assert hint == "<strong>hint:</strong> 1. use *add_*"  # our label; their text as is


def test_gradescope_shows_a_failed_checks_reproducer_as_a_code_block() -> None:
    from grader.platforms.gradescope.results import results_json
    from tests.conftest import failed_row, report_of

    code = "# a `quoted` name\nassert False, 'x'\n"
    results = results_json(report_of(failed_row(reproducer=code),
                                     failed_row("sgd_step.values", status="passed")))
    failed, passed = results["tests"][:2]
    assert "```python\n# a `quoted` name\nassert False, 'x'\n```" in failed["output"]
    assert "```" not in passed["output"]
