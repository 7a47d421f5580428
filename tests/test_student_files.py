"""A student's files as data: names kept apart, links not followed, any file read safely."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.layouts import discover
from grader.student_files import (
    NotAFileError,
    caseless,
    display_name,
    file_stem,
    folder_digest,
    folder_problem,
    read_bytes,
    same_person,
)

SOLUTION = "def zero_grad(params, set_to_none=False):\n    pass\n"

# Names as file systems hand them over: any text, and names that are not UTF-8 (surrogates).
names = st.one_of(st.text(min_size=1, max_size=300),
                  st.binary(min_size=1, max_size=60).map(
                      lambda data: data.decode("utf-8", "surrogateescape")))


@given(st.lists(names, min_size=2, max_size=6, unique=True))
@settings(max_examples=400, deadline=None)
def test_stems_differ_for_different_names_even_where_case_is_ignored(students) -> None:
    stems = [file_stem(student) for student in students]
    assert len({stem.casefold() for stem in stems}) == len(students)
    for stem in stems:
        assert "/" not in stem and "\0" not in stem and not stem.startswith(".")
        assert 0 < len(stem.encode()) <= 200 and stem.isascii()


@pytest.mark.parametrize("first, second", [
    ("Mary Ann", "Mary_Ann"), ("li_wei", "li~wei"), ("a.b", "a_b"), ("x y", "x%20y"),
    ("Alice", "^alice"), ("..", "%2E.")])
def test_names_a_folding_would_merge_get_their_own_files(first: str, second: str) -> None:
    assert file_stem(first) != file_stem(second)


def test_names_that_mean_one_person_are_found_together() -> None:
    nfc, nfd = unicodedata.normalize("NFC", "José"), unicodedata.normalize("NFD", "José")
    assert same_person(["Alice", "alice", nfc, nfd, "bob"]) == {
        "Alice": ["alice"], "alice": ["Alice"], nfc: [nfd], nfd: [nfc]}
    assert caseless("Straße") == caseless("STRASSE")
    assert same_person(["Mary Ann", "Mary_Ann", "li_wei", "li~wei"]) == {}


def test_a_name_that_is_not_utf8_is_shown_with_its_bytes() -> None:
    raw = b"caf\xe9".decode("utf-8", "surrogateescape")
    assert display_name(raw) == "caf\\xe9"
    assert display_name("café") == "café"


def test_the_reader_refuses_what_is_not_a_regular_file_and_stops_at_its_limit(
        tmp_path: Path) -> None:
    fifo = tmp_path / "optimizer.py"
    os.mkfifo(fifo)  # a read would wait for a writer forever
    with pytest.raises(NotAFileError):
        read_bytes(fifo, limit=10)
    link = tmp_path / "link.py"
    link.symlink_to("/dev/zero")  # an endless file
    with pytest.raises(NotAFileError):
        read_bytes(link, limit=10)
    big = tmp_path / "big.py"
    big.write_bytes(b"x" * 11)
    with pytest.raises(ValueError, match="more than 10 bytes"):
        read_bytes(big, limit=10)
    assert read_bytes(big, limit=11) == b"x" * 11


def test_a_folder_with_a_link_out_is_refused_and_one_inside_is_not(tmp_path: Path) -> None:
    secret = tmp_path / "secret.toml"
    secret.write_text("seed = 4242\n")
    own = tmp_path / "alice"
    (own / "versions").mkdir(parents=True)
    (own / "versions" / "v2.py").write_text(SOLUTION)
    (own / "optimizer.py").symlink_to("versions/v2.py")
    assert folder_problem(own) == ""
    (own / "versions" / "helper.py").symlink_to(secret)
    assert folder_problem(own) == ("versions/helper.py is a symbolic link that leads outside "
                                   "the student's folder")


def test_the_digest_covers_every_file_beside_the_submission(tmp_path: Path) -> None:
    own = tmp_path / "alice"
    own.mkdir()
    (own / "optimizer.py").write_text("from helper import *\n")
    (own / "helper.py").write_text(SOLUTION)
    before = folder_digest(own)
    assert folder_digest(own) == before  # the same folder, the same digest
    (own / "helper.py").write_text(SOLUTION.replace("pass", "return None"))
    changed = folder_digest(own)
    assert changed != before
    (own / "data").mkdir()
    (own / "data" / "x.txt").write_text("1")
    assert folder_digest(own) != changed


def test_links_to_a_classmate_are_refused_in_every_layout(tmp_path: Path) -> None:
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "bob.py").write_text(SOLUTION)
    (flat / "mallory.py").symlink_to("bob.py")
    folders = tmp_path / "folders"
    (folders / "bob").mkdir(parents=True)
    (folders / "bob" / "optimizer.py").write_text(SOLUTION)
    (folders / "mallory").mkdir()
    (folders / "mallory" / "optimizer.py").symlink_to("../bob/optimizer.py")
    (folders / "trudy").symlink_to("bob")
    (folders / "eve").mkdir()
    (folders / "eve" / "optimizer.py").write_text("from helper import *\n")
    (folders / "eve" / "helper.py").symlink_to("../bob/optimizer.py")
    (folders / "zed").symlink_to(".")  # a folder holding every classmate
    (folders / "ivy" / "ps1").mkdir(parents=True)
    (folders / "ivy" / "ps1" / "optimizer.py").write_text(SOLUTION)
    (folders / "oscar").mkdir()
    (folders / "oscar" / "ps1").symlink_to("../ivy/ps1")  # the assignment folder is the link
    (flat / "zed").symlink_to(".")
    found = {f.student: f for f in discover(flat, filename="optimizer.py")}
    assert found["zed"].error == "zed is a symbolic link to bob.py, another student's submission"
    assert found["mallory"].path is None
    assert found["mallory"].error == ("mallory.py is a symbolic link to bob.py, another "
                                      "student's submission")
    found = {f.student: f for f in discover(folders, filename="optimizer.py")}
    assert found["bob"].path is not None
    assert found["mallory"].error == ("optimizer.py is a symbolic link to bob, another "
                                      "student's submission")
    assert found["trudy"].error == "trudy is a symbolic link to bob, another student's submission"
    assert found["eve"].error == "helper.py is a symbolic link to bob, another student's submission"
    assert "another student's submission" in found["zed"].error
    assert found["oscar"].error == "ps1 is a symbolic link to ivy, another student's submission"
    assert found["ivy"].path is not None


def test_colliding_and_twin_names_each_get_one_entry(tmp_path: Path) -> None:
    nfc, nfd = unicodedata.normalize("NFC", "José"), unicodedata.normalize("NFD", "José")
    for name in ("Mary Ann", "Mary_Ann", "li_wei", "li~wei", "Alice", "alice", nfc, nfd):
        (tmp_path / f"{name}.py").write_text(SOLUTION)
    os.mkfifo(tmp_path / "fifo.py")
    (tmp_path / os.fsdecode(b"caf\xe9.py")).write_text(SOLUTION)
    found = {f.student: f for f in discover(tmp_path, filename="optimizer.py")}
    assert set(found) == {"Mary Ann", "Mary_Ann", "li_wei", "li~wei", "Alice", "alice", nfc,
                          nfd, "fifo", "caf\\xe9"}
    for graded in ("Mary Ann", "Mary_Ann", "li_wei", "li~wei"):
        assert found[graded].path is not None, graded
    assert found["caf\\xe9"].error == ("the name caf\\xe9.py is not UTF-8 text, which no "
                                       "gradebook or LMS can hold: rename it")
    assert "`Alice` and `alice` differ only in case" in found["alice"].error
    assert found["Alice"].error == found["alice"].error and found["Alice"].path is None
    assert found[nfc].path is None and found[nfd].path is None
    assert found["fifo"].path is not None  # found; the reader says why it cannot be read


@given(st.lists(st.text(alphabet="abAB _~.-é\u0301%^", min_size=1, max_size=6),
                min_size=1, max_size=8, unique=True))
@settings(max_examples=60, deadline=None)
def test_every_file_of_a_generated_class_is_one_student(tmp_path_factory, students) -> None:
    folder = tmp_path_factory.mktemp("class")
    written = set()
    for student in students:
        name = f"{student}.py"
        if name.startswith(".") or (folder / name).exists():
            continue  # a hidden file, or one the file system already holds under this name
        (folder / name).write_text(SOLUTION)
        written.add(student)
    found = discover(folder, filename="optimizer.py")
    assert sorted(f.student for f in found) == sorted(written)
    twins = same_person(written)
    for entry in found:
        assert (entry.path is None) == (entry.student in twins), entry


@pytest.mark.parametrize("name", ["Optimizer.py", "optimizer (1).py", "optimizer(2).ipynb",
                                  "optimizer-3.py", "optimizer copy.py", "OPTIMIZER_copy_2.py"])
def test_the_lab_is_told_from_a_downloaded_or_renamed_file(name: str) -> None:
    from grader.labs import infer_lab_name

    assert infer_lab_name(Path(name)) == "optim"
    assert infer_lab_name(Path("notes (1).py")) is None


def test_a_python_file_and_a_notebook_of_one_lab_in_one_folder_are_ambiguous(
        tmp_path: Path) -> None:
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "optimizer.py").write_text(SOLUTION)
    (tmp_path / "alice" / "optimizer.ipynb").write_text("{}")
    (alice,) = discover(tmp_path, filename="optimizer.py")
    assert alice.path is None
    assert alice.error == ("both optimizer.py and optimizer.ipynb in alice/: keep the one to "
                           "be graded")
