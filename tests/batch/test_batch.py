"""Batch grading: layouts, isolation per submission, resumable output, the gradebook."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.batch import BatchOptions, Pending, grade_class, prepare
from grader.engine import CheckOptions
from grader.grades import load_reports
from grader.layouts import discover
from grader.models import Limits, Report
from tests.conftest import ROOT, full_marks, grader_cli

# The classes graded here borrow their workers' sandboxes (conftest.shared_batch_workers).
pytestmark = pytest.mark.usefixtures("shared_batch_workers")

KNOWN = ROOT / "tests" / "submissions" / "optim"


def copy(name: str, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text((KNOWN / f"{name}.py").read_text())
    return target


def notebook(name: str, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell((KNOWN / f"{name}.py").read_text())]
    nbformat.write(book, target)
    return target


def options(out: Path, **kwargs) -> BatchOptions:
    limits = Limits(timeout_s=kwargs.pop("timeout", 20))
    check = CheckOptions(device="cpu", lang="en", limits=limits)
    return BatchOptions(lab="optim", out=out, workers=kwargs.pop("workers", 2), check=check,
                        **kwargs)


def rows(out: Path) -> dict[str, dict[str, str]]:
    reader = csv.DictReader(io.StringIO((out / "gradebook.csv").read_text()))
    return {row["student"]: row for row in reader}


def test_every_layout_is_found(tmp_path: Path) -> None:
    copy("reference_copy", tmp_path / "flat" / "alice.py")
    notebook("reference_copy", tmp_path / "flat" / "bob.ipynb")
    copy("reference_copy", tmp_path / "flat" / "carol" / "optimizer.py")
    copy("reference_copy", tmp_path / "flat" / "dan" / "whatever_name.py")
    nbgrader = tmp_path / "course" / "submitted" / "erin" / "ps1" / "optimizer.ipynb"
    notebook("reference_copy", nbgrader)
    flat = {f.student: f for f in discover(tmp_path / "flat", filename="optimizer.py")}
    assert {s: f.path.name for s, f in flat.items() if f.path} == {
        "alice": "alice.py", "bob": "bob.ipynb", "carol": "optimizer.py",
        "dan": "whatever_name.py"}
    (erin,) = discover(tmp_path / "course", filename="optimizer.py")
    assert erin.student == "erin" and erin.path == nbgrader


def test_ambiguous_and_empty_folders_are_per_student_errors(tmp_path: Path) -> None:
    copy("reference_copy", tmp_path / "alice.py")
    notebook("reference_copy", tmp_path / "alice.ipynb")
    (tmp_path / "bob").mkdir()
    copy("reference_copy", tmp_path / "carol" / "a.py")
    copy("reference_copy", tmp_path / "carol" / "b.py")
    found = {f.student: f for f in discover(tmp_path, filename="optimizer.py")}
    assert "several submissions for alice" in found["alice"].error
    assert "no optimizer.py" in found["bob"].error
    assert "several files in carol/" in found["carol"].error


@pytest.mark.slow
def test_a_class_is_graded_with_per_student_outcomes(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    copy("reference_copy", subs / "alice.py")
    copy("sgd_step_data_assign", subs / "bob.py")
    copy("sys_exit_at_import", subs / "carol.py")
    (subs / "dan.py").write_text("")
    (subs / "erin.py").write_bytes(b"\xff\xfe\x00 not utf-8")
    copy("reference_copy", subs / "fay.py")
    source = (subs / "fay.py").read_text()
    head = "def sgd_step(params: Iterable[torch.Tensor], lr: float) -> None:\n"
    assert head in source
    (subs / "fay.py").write_text(source.replace(head, head + "    while True:\n        pass\n", 1))
    out = tmp_path / "out"
    result = grade_class(subs, options=options(out, timeout=3))
    book = rows(out)
    assert set(book) == {"alice", "bob", "carol", "dan", "erin", "fay"}
    assert book["alice"]["percent"] == "100.0"
    assert float(book["bob"]["sgd_step (score)"]) < float(book["bob"]["sgd_step (max)"])
    assert book["carol"]["score"] == "0" and book["carol"]["status"] == "did not import"
    assert "SystemExit" in book["carol"]["error"]
    assert book["dan"]["status"] == "not gradable" and "empty" in book["dan"]["error"]
    assert book["erin"]["status"] == "not gradable" and "cannot read" in book["erin"]["error"]
    # Whatever the status, a row has the lab's maxima.
    maxima = {f: book["alice"][f"{f} (max)"] for f in ("zero_grad", "sgd_step", "SGD", "Adam")}
    for student in ("carol", "dan", "erin"):
        assert {f: book[student][f"{f} (max)"] for f in maxima} == maxima, student
    # The hang costs sgd_step only (tests/sandbox: a hang in zero_grad costs its callers too).
    assert book["fay"]["sgd_step (score)"] == "0"
    assert book["fay"]["zero_grad (score)"] == book["fay"]["zero_grad (max)"]
    assert book["fay"]["Adam (score)"] == book["fay"]["Adam (max)"]
    assert result.graded == 4 and len(result.errors) == 2
    assert (out / "feedback" / "bob.txt").read_text().count("✗") >= 1
    assert "kept" not in (out / "summary.txt").read_text()
    summary = (out / "summary.txt").read_text()
    # One vocabulary, one count: the three statuses add up to the students found.
    assert summary.startswith("6 students: 3 graded, 1 did not import, 2 not gradable; ")
    assert "over the 4 whose code ran" in summary
    assert "sgd_step." not in summary  # bob's mistakes are his alone
    # The class report page is written beside them, every student named in its table, and
    # `inplace-grader report` rebuilds it from the reports in another language.
    page = (out / "report.html").read_text()
    assert all(f'.txt">{student}</a></td>' in page for student in book), "a row per student"
    rebuilt = grader_cli("report", str(out), "--lang", "ko")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert '<html lang="ko">' in (out / "report.html").read_text()


@pytest.mark.slow  # a class graded
def test_printing_past_the_output_limit_in_a_class_is_told_as_output(tmp_path: Path) -> None:
    """`grade`'s route of the output limit (issue 30): the student's row and feedback say what
    was printed, never that the function raised OSError; only that function pays."""
    subs = tmp_path / "subs"
    copy("zero_grad_prints_past_the_output_limit", subs / "gil.py")
    copy("reference_copy", subs / "alice.py")
    check = CheckOptions(device="cpu", lang="en",
                         limits=Limits(timeout_s=20, file_size_bytes=1024**2))
    out = tmp_path / "out"
    grade_class(subs, options=BatchOptions(lab="optim", out=out, workers=2, check=check))
    book = rows(out)
    assert book["gil"]["status"] == book["alice"]["status"] == "graded"
    assert book["gil"]["zero_grad (score)"] == "0"
    assert book["gil"]["sgd_step (score)"] == book["gil"]["sgd_step (max)"]
    feedback = (out / "feedback" / "gil.txt").read_text()
    assert "zero_grad: your program printed more than 1 MiB (the limit)" in feedback
    assert "OSError" not in feedback and "File too large" not in feedback


@pytest.mark.slow
def test_an_interrupted_run_resumes_to_the_same_gradebook(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    for student, name in [("a", "reference_copy"), ("b", "sgd_step_isub_temp"),
                          ("c", "SGD_zero_init_buffer"), ("d", "zero_grad_mul_zero"),
                          ("e", "Adam_no_bias_correction")]:
        copy(name, subs / f"{student}.py")
    interrupted = tmp_path / "interrupted"
    seen: list[str] = []

    def stop_after_two(student: str, report, reused: bool) -> None:
        seen.append(student)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        grade_class(subs, options=options(interrupted, workers=1), on_progress=stop_after_two)
    assert len(load_reports(interrupted)) == 2  # written as soon as graded, kept on Ctrl-C
    assert len(rows(interrupted)) == 2  # the gradebook is rebuilt from them

    resumed = grade_class(subs, options=options(interrupted))
    assert resumed.reused == 2 and resumed.graded == 3
    fresh = tmp_path / "fresh"
    grade_class(subs, options=options(fresh))
    assert (interrupted / "gradebook.csv").read_text() == (fresh / "gradebook.csv").read_text()

    forced = grade_class(subs, options=options(interrupted, force=True))
    assert forced.reused == 0 and forced.graded == 5


def test_a_changed_submission_is_regraded(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    copy("sgd_step_isub_temp", subs / "a.py")
    out = tmp_path / "out"
    grade_class(subs, options=options(out, workers=1))
    copy("reference_copy", subs / "a.py")
    again = grade_class(subs, options=options(out, workers=1))
    assert again.reused == 0 and rows(out)["a"]["percent"] == "100.0"


@pytest.mark.cli_subprocess
def test_the_grade_command_end_to_end(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    copy("reference_copy", subs / "alice.py")
    copy("sgd_step_data_assign", subs / "bob.py")
    copy("sgd_step_data_assign", subs / "carol.py")
    run = subprocess.run([sys.executable, "-m", "grader", "grade", str(subs), "--lab", "optim",
                          "--out", str(tmp_path / "out"), "--device", "cpu", "-v"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "3 students: 3 graded, 0 did not import, 0 not gradable (0 of them reused" in run.stdout
    assert "most failed checks" in run.stdout  # two students failed them
    full = f"{full_marks('optim'):g}"
    assert f"alice: graded, {full}/{full}" in run.stderr.splitlines()  # -v: a line per student
    # The same command again, in this process (conftest.grader_cli): what it prints.
    quiet = grader_cli("grade", str(subs), "--lab", "optim", "-o", str(tmp_path / "out"),
                       "--device", "cpu", "-q")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    (line,) = quiet.stdout.splitlines()  # -q: the closing line only
    assert line.startswith("3 students: 3 graded, 0 did not import, 0 not gradable (3 of them "
                           "reused")
    empty = tmp_path / "empty"
    empty.mkdir()
    run = grader_cli("grade", str(empty), "--lab", "optim", "--out", str(tmp_path / "out2"))
    assert run.returncode == 2 and "no submissions found" in run.stderr


@pytest.mark.slow
def test_a_student_folder_may_import_its_own_helpers_but_not_other_students(
        tmp_path: Path) -> None:
    source = (KNOWN / "reference_copy.py").read_text()
    helper = "from helpers import zero_grad  # noqa\n"
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    (subs / "alice" / "helpers.py").write_text(source)
    head, tail = source.split("def zero_grad")[0], source.split("def sgd_step")[1]
    future = "from __future__ import annotations\n"
    (subs / "alice" / "optimizer.py").write_text(
        head.replace(future, future + helper) + "def sgd_step" + tail)
    (subs / "bob.py").write_text("import alice_helpers_do_not_exist  # noqa\n" + source)
    (subs / "carol.py").write_text("import bob  # another student's file: not importable\n"
                                   + source)
    out = tmp_path / "out"
    grade_class(subs, options=options(out))
    book = rows(out)
    assert book["alice"]["percent"] == "100.0"
    assert book["carol"]["score"] == "0"


def test_links_out_of_the_class_folder_or_to_nothing_are_error_rows(tmp_path: Path) -> None:
    secret = tmp_path / "secret.py"
    secret.write_text("ANSWER = 'root only'\n")
    secret.chmod(0o600)
    subs = tmp_path / "subs"
    copy("reference_copy", subs / "alice.py")
    (subs / "bob.py").symlink_to(secret)  # a file the grader (root, say) may read
    (subs / "carol.py").symlink_to(subs / "missing.py")
    (subs / "dan.py").symlink_to(subs / "alice.py")  # a classmate's file: alice's marks
    (subs / "erin").symlink_to(tmp_path)  # a student folder that leads out
    out = tmp_path / "out"
    result = grade_class(subs, options=options(out))
    assert dict(result.errors) == {
        "bob": "bob.py is a symbolic link that leads outside the submissions folder",
        "carol": "carol.py is a symbolic link to nothing",
        "dan": "dan.py is a symbolic link to alice.py, another student's submission",
        "erin": "erin is a symbolic link that leads outside the submissions folder"}
    table = rows(out)
    assert set(table) == {"alice", "bob", "carol", "dan", "erin"}
    assert table["alice"]["score"] == table["alice"]["max_score"]
    assert all(table[s]["status"] == "not gradable" for s in ("bob", "carol", "dan", "erin"))
    assert "root only" not in "".join(p.read_text() for p in out.rglob("*") if p.is_file())


def test_a_name_a_spreadsheet_would_run_is_written_as_text(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    copy("reference_copy", subs / "=HYPERLINK(evil).py")
    copy("reference_copy", subs / "-1+2.py")
    out = tmp_path / "out"
    grade_class(subs, options=options(out))
    students = set(rows(out))
    assert students == {"'=HYPERLINK(evil)", "'-1+2"}


def test_a_source_too_large_to_parse_safely_is_an_error_row_before_any_parse(tmp_path: Path
                                                                            ) -> None:
    subs = tmp_path / "subs"
    copy("reference_copy", subs / "alice.py")
    (subs / "bob.py").write_text("x = 1\n" * 200_000)  # 1.1 MiB of trivial statements
    out = tmp_path / "out"
    result = grade_class(subs, options=options(out))
    assert dict(result.errors) == {
        "bob": "bob.py is 1.1 MiB of Python; the grader reads at most 1 MiB "
               "(is a data file included?)"}


def test_a_flagged_submission_is_listed_for_the_instructor_and_neutral_for_the_student(
        tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    copy("reference_copy", subs / "alice.py")
    source = (KNOWN / "reference_copy.py").read_text()
    (subs / "bob.py").write_text(source + "\n\ndef _peek():\n    import sys\n"
                                 "    return sys._getframe(1).f_locals\n")
    out = tmp_path / "out"
    grade_class(subs, options=options(out))
    summary = (out / "summary.txt").read_text()
    assert "flagged for review by the integrity scan (1" in summary and "bob:" in summary
    assert "frame introspection" in summary and "alice" not in summary.split("flagged")[1]
    feedback = (out / "feedback" / "bob.txt").read_text()
    assert "flagged for review" in feedback and "_getframe" not in feedback
    table = rows(out)
    assert table["bob"]["score"] == table["alice"]["score"]  # flag: the points stay


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["cells", "cell_type", "source", "metadata", "nbgrader", "grade",
                         "nbformat", "nbformat_minor", "code", "x"]), inner, max_size=5),
    max_leaves=30)


file_names = st.one_of(
    st.text(st.characters(blacklist_characters="/\0", blacklist_categories=["Cs"]),
            min_size=1, max_size=40),
    st.binary(min_size=1, max_size=30).filter(lambda raw: b"/" not in raw and b"\0" not in raw)
    .map(os.fsdecode)).filter(lambda name: not name.startswith(".") and name not in ("..",))


@given(data=st.one_of(st.binary(max_size=3000),
                      json_values.map(lambda value: json.dumps(value).encode())),
       suffix=st.sampled_from([".py", ".ipynb"]), name=file_names)
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_bytes_in_a_students_file_are_their_row_or_their_submission(
        tmp_path: Path, data: bytes, suffix: str, name: str) -> None:
    folder = tmp_path / f"class{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    try:
        (folder / f"{name}{suffix}").write_bytes(data)
    except OSError:  # a name too long for this file system
        return
    (found,) = discover(folder, filename="optimizer.py")
    prepared = prepare(found, options(tmp_path / "out"))
    if isinstance(prepared, Pending):
        assert found.error == ""
        prepared.submission.source.encode("utf-8")  # what the child is handed: never raises
    else:
        report, reused = prepared
        assert not reused and report.student == found.student and report.error
        assert "\n" not in report.error and len(report.error) <= 300
        assert Report.model_validate_json(report.model_dump_json()) == report  # it can be saved
