"""Attacks on a class rather than on the grader: names that fold onto a classmate's, links to
a classmate's or a root-only file, a file that cannot be read, a helper changed behind a
reused report. Each student keeps exactly one row of their own, and the run goes on.

(The single-file attacks beside this folder are run by tests/hostile/test_attacks.py; these need a
class folder, so each builds its own.)
"""

from __future__ import annotations

import csv
import io
import json
import os
import unicodedata
from pathlib import Path

import pytest

from grader.batch import BatchOptions, grade_class
from grader.grades import load_reports
from grader.engine import CheckOptions, grade_upload
from grader.models import Limits
from grader.student_files import display_name

# The classes and uploads graded here borrow their sandboxes
# (conftest.shared_batch_workers, shared_check_sandboxes).
pytestmark = pytest.mark.usefixtures("shared_batch_workers", "shared_check_sandboxes")

ROOT = Path(__file__).resolve().parents[3]
KNOWN = ROOT / "tests" / "submissions" / "optim"
CORRECT = (KNOWN / "reference_copy.py").read_text()
BUGGY = (KNOWN / "sgd_step_data_assign.py").read_text()
SECRET = "set = { seed = 918273645 }"  # the first line of an instructor's hidden file


def options(out: Path, **kwargs) -> BatchOptions:
    check = CheckOptions(device="cpu", lang="en", limits=Limits(timeout_s=20))
    return BatchOptions(lab="optim", out=out, workers=2, check=check, **kwargs)


def rows(out: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text())))


def secret_file(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "hidden.toml"
    path.write_text(SECRET + "\n")
    path.chmod(0o600)
    return path


def every_text(out: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())


def test_a_class_of_folding_names_links_and_bad_files_keeps_one_row_each(tmp_path: Path
                                                                         ) -> None:
    subs = tmp_path / "subs"
    subs.mkdir()
    nfc, nfd = unicodedata.normalize("NFC", "José"), unicodedata.normalize("NFD", "José")
    for name, source in [("Mary Ann", CORRECT), ("Mary_Ann", BUGGY), ("li_wei", BUGGY),
                         ("li~wei", CORRECT), ("bob", CORRECT), (nfc, CORRECT),
                         (nfd, CORRECT), ("Kim", CORRECT), ("kim", BUGGY)]:
        (subs / f"{name}.py").write_text(source)
    (subs / "mallory.py").symlink_to("bob.py")  # bob's marks
    (subs / "peek.py").symlink_to(secret_file(tmp_path / "autograder"))
    os.mkfifo(subs / "fifo.py")  # a read would wait forever
    (subs / "nul.py").write_bytes(b"x = 1\0\n")
    (subs / "erin.ipynb").write_text(json.dumps(
        {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
         "cells": [{"cell_type": "code", "source": 42, "metadata": {}, "outputs": []}]}))
    (subs / "fred.ipynb").write_text('{"nbformat": 5, "cells": []}')
    (subs / "gus.ipynb").write_text("[" * 100_000 + "]" * 100_000)
    (subs / os.fsdecode(b"caf\xe9.py")).write_text(CORRECT)  # a name that is not UTF-8
    (subs / "Hal.PY").write_text(CORRECT)  # a suffix in capitals is still a submission
    (subs / "zed").symlink_to(".")  # a folder that holds every classmate
    out = tmp_path / "out"
    result = grade_class(subs, options=options(out))
    table = rows(out)
    students = [row["student"] for row in table]
    found = sorted(display_name(p.stem) for p in subs.iterdir())
    assert sorted(students) == sorted(found) and len(set(students)) == len(students)
    assert result.students == len(found)
    by = {row["student"]: row for row in table}
    assert by["Mary Ann"]["percent"] == "100.0" and by["li~wei"]["percent"] == "100.0"
    assert float(by["Mary_Ann"]["percent"]) < 100 and float(by["li_wei"]["percent"]) < 100
    assert by["Hal"]["percent"] == "100.0"
    for twin in (nfc, nfd, "Kim", "kim", "mallory", "peek", "fifo", "nul", "erin", "fred",
                 "gus", "caf\\xe9", "zed"):
        assert by[twin]["status"] == "not gradable", (twin, by[twin])
        assert "\n" not in by[twin]["error"] and by[twin]["error"], twin
    assert "another student's submission" in by["mallory"]["error"]
    reports = {report.student: report for report in load_reports(out)}
    assert set(reports) == set(students)  # a report file per student, none overwritten
    assert len(list((out / "feedback").iterdir())) == len(students)
    assert SECRET not in every_text(out) and "918273645" not in every_text(out)


def test_a_changed_helper_is_graded_again_not_reused(tmp_path: Path) -> None:
    alice = tmp_path / "subs" / "alice"
    alice.mkdir(parents=True)
    (alice / "optimizer.py").write_text("from helper import *  # noqa\n")
    (alice / "helper.py").write_text(CORRECT)
    out = tmp_path / "out"
    first = grade_class(tmp_path / "subs", options=options(out))
    assert first.graded == 1 and rows(out)[0]["percent"] == "100.0"
    (alice / "helper.py").write_text(BUGGY)
    again = grade_class(tmp_path / "subs", options=options(out))
    assert again.reused == 0 and again.graded == 1
    assert float(rows(out)[0]["percent"]) < 100
    unchanged = grade_class(tmp_path / "subs", options=options(out))
    assert unchanged.reused == 1


def test_a_report_is_reused_only_for_the_student_it_was_written_for(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ann.py").write_text(CORRECT)
    out = tmp_path / "out"
    grade_class(subs, options=options(out))
    (report,) = list((out / "reports").iterdir())
    # Another student's report under ann's file name (an old layout, a hand copy): not hers.
    forged = json.loads(report.read_text()) | {"student": "bea"}
    report.write_text(json.dumps(forged))
    again = grade_class(subs, options=options(out))
    assert again.reused == 0 and again.graded == 1
    assert [row["student"] for row in rows(out)] == ["ann"]


@pytest.mark.parametrize("layout", ["file", "helper", "classmate"])
def test_an_upload_that_links_out_shows_nothing_of_the_target(tmp_path: Path,
                                                               layout: str) -> None:
    secret = secret_file(tmp_path / "source")
    upload = tmp_path / "submission"
    upload.mkdir()
    if layout == "file":
        (upload / "optimizer.py").symlink_to(secret)
    elif layout == "helper":
        (upload / "optimizer.py").write_text("from helper import *  # noqa\n")
        (upload / "helper.py").symlink_to(secret)
    else:
        (tmp_path / "bob").mkdir()
        (tmp_path / "bob" / "optimizer.py").write_text(CORRECT)
        (upload / "optimizer.py").symlink_to(tmp_path / "bob" / "optimizer.py")
    report = grade_upload(upload, lab="optim",
                          options=CheckOptions(device="cpu", limits=Limits(timeout_s=20)))
    assert report.error and "symbolic link" in report.error
    assert report.score == 0
    assert "918273645" not in report.model_dump_json()
