"""Canvas and Moodle gradebook CSVs: what each import reads, the roster, and `export`."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from grader.exporters.lms_csv import (
    ExportError,
    canvas_csv,
    moodle_csv,
    moodle_feedback,
    number,
)
from grader.models import CheckResult, Report
from grader.roster import Roster, RosterError, parse_roster, read_roster
from grader.summary import GRADED, NOT_GRADABLE, Standing
from grader.views import STUDENT
from tests.conftest import Ran, grader_cli


def standing(student: str, score: float = 84, max_score: float = 84, *, error: str = "",
             failed: dict[str, str] | None = None) -> Standing:
    return Standing(student=student, score=score, max_score=max_score, error=error,
                    points={}, failed=failed or {},
                    status=NOT_GRADABLE if error else GRADED)


def table(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def roster(text: str) -> Roster:
    return parse_roster(text, source="roster.csv")


CLASS = [standing("bob", 61.5, failed={"sgd_step.identity": "sgd_step returns its input"}),
         standing("alice"),
         standing("carol", 0, error="optimizer.py is empty")]


# Canvas

def test_a_report_is_never_matched_to_a_roster_row_by_a_folded_name() -> None:
    people = roster("student,sis_login_id\nMaryAnn,mann\n")
    result = canvas_csv([standing("maryann", 70)], assignment="optim", roster=people)
    assert [row[0] for row in table(result.text)] == ["Student", "Points Possible"]
    assert result.warnings[0] == (
        "maryann: has a report, but is not in the roster roster.csv; the roster's `MaryAnn` "
        "differs only in case or accents and is not taken for it: left out (add a roster row "
        "to export it)")


def test_an_empty_or_missing_submission_can_get_its_zero() -> None:
    people = roster("student,sis_login_id\nbob,bsmith\ncarol,cwhite\ndan,dbrown\n")
    result = canvas_csv(CLASS, assignment="optim", roster=people, zero_missing=True)
    _, _, *rows = table(result.text)
    assert [(row[3], row[-1]) for row in rows] == [("bsmith", "61.5"), ("cwhite", "0"),
                                                  ("dbrown", "0")]
    assert "dan: in the roster, but no report: exported as 0 (--zero-missing)" in result.warnings
    left_out = canvas_csv(CLASS, assignment="optim", roster=people)
    assert [row[3] for row in table(left_out.text)[2:]] == ["bsmith"]  # the default: unchanged


def test_canvas_header_points_possible_and_sis_login_id() -> None:
    result = canvas_csv(CLASS, assignment="optim")
    header, points, *rows = table(result.text)
    assert "Student" in header[0] and "ID" in header[1] and "Section" in header[4]
    assert header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "optim"]
    assert points == ["Points Possible", "", "", "", "", "84"]
    assert rows == [["alice", "", "", "alice", "", "84"], ["bob", "", "", "bob", "", "61.5"]]
    assert result.rows == 2


def test_canvas_assignment_id_goes_in_the_title() -> None:
    header = table(canvas_csv(CLASS, assignment="Lab 1", assignment_id="1234").text)[0]
    assert header[-1] == "Lab 1 (1234)"
    with pytest.raises(ExportError, match="not a number"):
        canvas_csv(CLASS, assignment="Lab 1", assignment_id="12a")


def test_not_graded_is_left_out_never_zero_nor_blank() -> None:
    for result in (canvas_csv(CLASS, assignment="optim"), moodle_csv(CLASS, assignment="optim")):
        assert all("carol" not in row for row in table(result.text))
        assert result.warnings == ["carol: not graded (optimizer.py is empty): left out "
                                   "(their grade in the LMS is unchanged)"]


@pytest.mark.parametrize("title", ["Final Grade lab", "Lab 1 Current Score", "Override Grade",
                                   "Unposted Final Points", "Final Score"])
def test_canvas_rejects_titles_canvas_would_drop(title: str) -> None:
    with pytest.raises(ExportError, match="Canvas silently drops"):
        canvas_csv(CLASS, assignment=title)


def test_canvas_percent_out_of_100() -> None:
    result = canvas_csv([standing("bob", 61, 84)], assignment="optim", percent=True)
    _, points, row = table(result.text)
    assert points[-1] == "100" and row[-1] == "72.62"


def test_canvas_roster_maps_ids_and_warns_about_the_rest() -> None:
    people = roster("Student,Name,Canvas ID,SIS User ID,SIS Login ID,Section\n"
                    'bob,"Smith, Bob",501,s002,bsmith,Sec 1\n'
                    "alice,Alice Jones,,s001,,Sec 2\n"
                    "dan,Dan Brown,503,s004,dbrown,Sec 1\n"
                    "carol,Carol White,504,s003,cwhite,Sec 2\n")
    students = [*CLASS, standing("erin", 70)]
    result = canvas_csv(students, assignment="optim", roster=people)
    _, _, *rows = table(result.text)
    assert rows == [["Smith, Bob", "501", "s002", "bsmith", "Sec 1", "61.5"],  # roster order
                    ["Alice Jones", "", "s001", "", "Sec 2", "84"]]
    assert result.warnings == [
        "erin: has a report, but is not in the roster roster.csv: left out (add a roster "
        "row to export it)",
        "dan: in the roster, but no report: left out (their grade in the LMS is unchanged)",
        "carol: not graded (optimizer.py is empty): left out (their grade in the LMS is "
        "unchanged)"]


def test_canvas_roster_without_ids_warns_of_name_matching() -> None:
    result = canvas_csv(CLASS[:2], assignment="optim",
                        roster=roster("student,name\nalice,Alice Jones\nbob,Bob Smith\n"))
    assert result.warnings == ["roster.csv has no canvas_id, sis_user_id or sis_login_id "
                               "column: Canvas will match students by name only"]
    assert table(result.text)[2] == ["Alice Jones", "", "", "", "", "84"]


def test_points_possible_is_the_common_maximum_and_others_are_warned() -> None:
    result = canvas_csv([standing("a", 10, 84), standing("b", 20, 84), standing("c", 5, 80)],
                        assignment="optim")
    assert table(result.text)[1][-1] == "84"
    assert result.warnings == ["c: graded out of 80 points, not 84; export percentages to "
                               "compare them (--percent)"]


@pytest.mark.parametrize(("value", "text"), [(84.0, "84"), (61.5, "61.5"), (1 / 3, "0.33"),
                                             (72.619, "72.62"), (0.0, "0"), (-0.001, "0")])
def test_numbers_have_at_most_two_decimals_and_no_trailing_zeros(value: float,
                                                                 text: str) -> None:
    assert number(value) == text


# Moodle

def test_moodle_header_and_feedback_without_roster() -> None:
    result = moodle_csv(CLASS, assignment="Lab 1")
    assert table(result.text) == [
        ["Username", "Lab 1", "Feedback"],
        ["alice", "84", "84/84 points"],
        ["bob", "61.5", "61.5/84 points; failed: sgd_step returns its input"]]
    assert "Last downloaded from this course" not in result.text


def test_moodle_feedback_names_three_failed_checks() -> None:
    failed = {f"f.c{i}": f"check {i}" for i in range(5)}
    assert moodle_feedback(standing("a", 20, 84, failed=failed)) == (
        "20/84 points; failed: check 0, check 1, check 2 (+2 more)")
    assert moodle_feedback(standing("a", 20, 84, failed=failed), "ko") == (
        "20/84점; 실패: check 0, check 1, check 2 (그 밖에 2개)")


@pytest.mark.parametrize(("columns", "values", "header"), [
    ("email,username,idnumber", "a@x.edu,auser,A1", "Email address"),
    ("username,idnumber", "auser,A1", "Username"),
    ("idnumber", "A1", "ID number"),
    ("name", "Alice Jones", "Username"),
])
def test_moodle_identifier_is_email_else_username_else_id_number(columns: str, values: str,
                                                                 header: str) -> None:
    people = roster(f"student,{columns}\nalice,{values}\n")
    result = moodle_csv([standing("alice")], assignment="optim", roster=people)
    expected = {"Email address": "a@x.edu", "Username": "auser", "ID number": "A1"}[header]
    if columns == "name":
        expected = "alice"  # no Moodle id in the roster: our student id is the username
        assert result.warnings == ["roster.csv has no email, username or idnumber values: "
                                   "the student ids are exported as Moodle usernames"]
    assert table(result.text) == [[header, "optim", "Feedback"],
                                  [expected, "84", "84/84 points"]]


def test_moodle_student_without_the_identifier_is_left_out() -> None:
    people = roster("student,email\nalice,a@x.edu\nbob,\n")
    result = moodle_csv(CLASS[:2], assignment="optim", roster=people)
    assert [row[0] for row in table(result.text)] == ["Email address", "a@x.edu"]
    assert result.warnings == ["bob: no email in the roster (line 3): left out"]


def test_moodle_grades_over_100_warn_and_percent_keeps_them_within() -> None:
    students = [standing("a", 120, 150), standing("b", 75, 150)]
    points = moodle_csv(students, assignment="optim")
    assert any("above 100" in w and "--percent" in w for w in points.warnings)
    percent = moodle_csv(students, assignment="optim", percent=True)
    grades = [float(row[1]) for row in table(percent.text)[1:]]
    assert grades == [80.0, 50.0] and max(grades) <= 100 and not percent.warnings


@pytest.mark.parametrize("title", ["Feedback", "Username", "Last downloaded from this course",
                                   "  "])
def test_moodle_rejects_a_grade_column_named_like_another(title: str) -> None:
    with pytest.raises(ExportError):
        moodle_csv(CLASS, assignment=title)


def check(check_id: str, *, status: str = "passed", hidden: bool = False,
          score: float = 2) -> CheckResult:
    function = check_id.split(".")[0]
    return CheckResult(id=check_id, name=f"{check_id} name", function=function, kind="api",
                       device="cpu", status=status, passed=status == "passed",
                       score=score if status == "passed" else 0, max_score=score,
                       hidden=hidden)


def report(student: str, checks: list[CheckResult], *, error: str = "") -> Report:
    return Report(lab="optim", student=student, error=error,
                  score=sum(c.score for c in checks), max_score=sum(c.max_score for c in checks)
                  or 6, checks=checks, grader_version="0.1.0", torch_version="2.4.0",
                  elapsed_s=0.1)


def test_hidden_failed_checks_are_not_named_to_students() -> None:
    graded = report("alice", [check("sgd_step.identity", status="failed"),
                              check("sgd_step.secret", status="failed", hidden=True),
                              check("SGD.api")])
    visible = STUDENT.gradebook_standing(graded)
    assert visible.score == 2 and visible.max_score == 6  # the grade counts every check
    assert moodle_feedback(visible) == "2/6 points; failed: sgd_step.identity name"


# Roster

def test_roster_headers_are_case_insensitive_and_a_bom_is_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "roster.csv"
    path.write_bytes("\ufeffStudent ,EMAIL ,Canvas ID,Notes\r\n alice ,a@x.edu,7,x\r\n".encode())
    people = read_roster(path)
    entry = people.get("alice")
    assert entry is not None and entry.email == "a@x.edu" and entry.canvas_id == "7"
    assert entry.line == 2 and people.columns == {"email", "canvas_id"} and len(people) == 1


@pytest.mark.parametrize(("text", "message"), [
    ("name,email\nalice,a@x.edu\n",
     "roster.csv: line 1: no `student` column (columns: name, email); add a `student` column"),
    ("student,email\nalice,a@x.edu\nbob,b@x.edu\n\nalice,c@x.edu\n",
     "roster.csv: line 5: student `alice` is listed twice (first on line 2); keep one row"),
    ("student,Email,email\n", "roster.csv: line 1: column `email` appears twice"),
    ("", "roster.csv: empty"),
    ("student,name\nalice,Jones, Alice\n", "roster.csv: line 2: 3 values but the header has 2"),
    ("student,canvas_id\nalice,u17\n", "roster.csv: line 2: canvas_id `u17` is not a number"),
    ("student,name\n,Alice\n", "roster.csv: line 2: no student id"),
    ("student\nAlice\nbob\nalice\n",
     "roster.csv: line 4: student `alice` is also on line 2 (`Alice`), and an LMS takes them "
     "for one person"),
    ("student,username\nann,AS1\nbea,as1\n",
     "roster.csv: line 3: username `as1` is also on line 2 (`AS1`)"),
    ("student,canvas_id\nann,17\nbea,17\n", "roster.csv: line 3: canvas_id `17` is also"),
])
def test_roster_errors_name_the_file_and_line(text: str, message: str) -> None:
    with pytest.raises(RosterError) as caught:
        roster(text)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_unreadable_roster_files(tmp_path: Path) -> None:
    with pytest.raises(RosterError, match=r"missing\.csv: cannot read the roster"):
        read_roster(tmp_path / "missing.csv")
    latin = tmp_path / "latin.csv"
    latin.write_bytes("student,name\nalice,Zoë\n".encode("latin-1"))
    with pytest.raises(RosterError, match=r"latin\.csv: not UTF-8 text"):
        read_roster(latin)


# The command line

def run(*args: str) -> Ran:
    return grader_cli("export", *args)


@pytest.fixture
def grades(tmp_path: Path) -> Path:
    out = tmp_path / "grades"
    (out / "reports").mkdir(parents=True)
    reports = [report("alice", [check("sgd_step.identity"), check("SGD.api")]),
               report("bob", [check("sgd_step.identity", status="failed"), check("SGD.api")]),
               report("carol", [], error="optimizer.py is empty")]
    for graded in reports:
        (out / "reports" / f"{graded.student}.json").write_text(graded.model_dump_json())
    return out


def test_export_canvas_end_to_end_and_no_overwrite(grades: Path) -> None:
    result = run(str(grades), "--to", "canvas", "--assignment-id", "42")
    assert result.returncode == 0, result.stderr
    written = grades / "canvas.csv"
    assert f"wrote {written}: 2 students" in result.stdout
    assert result.stderr.splitlines() == ["warning: carol: not graded (optimizer.py is empty): "
                                          "left out (their grade in the LMS is unchanged)"]
    header, points, *rows = table(written.read_text(encoding="utf-8"))
    assert header[:2] == ["Student", "ID"] and header[-1] == "optim (42)"
    assert points[0] == "Points Possible" and points[-1] == "4"
    assert rows == [["alice", "", "", "alice", "", "4"], ["bob", "", "", "bob", "", "2"]]

    before = written.read_text(encoding="utf-8")
    again = run(str(grades), "--to", "canvas", "--percent")
    assert again.returncode == 2
    assert again.stderr == f"inplace-grader: error: {written} exists; pass --force to " \
                           "overwrite it, or -o FILE\n"
    assert written.read_text(encoding="utf-8") == before
    forced = run(str(grades), "--to", "canvas", "--percent", "--force")
    assert forced.returncode == 0 and table(written.read_text())[3][-1] == "50"


def test_export_moodle_with_roster(grades: Path, tmp_path: Path) -> None:
    (tmp_path / "roster.csv").write_text("student,email\nalice,alice@x.edu\nbob,bob@x.edu\n"
                                         "carol,carol@x.edu\ndan,dan@x.edu\n")
    out = tmp_path / "moodle" / "lab1.csv"
    result = run(str(grades), "--to", "moodle", "--assignment", "Lab 1", "--roster",
                 str(tmp_path / "roster.csv"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert table(out.read_text(encoding="utf-8")) == [
        ["Email address", "Lab 1", "Feedback"],
        ["alice@x.edu", "4", "4/4 points"],
        ["bob@x.edu", "2", "2/4 points; failed: sgd_step.identity name"]]
    warnings = result.stderr.splitlines()
    assert len(warnings) == 2 and all(w.startswith("warning: ") for w in warnings)
    assert "dan: in the roster, but no report" in warnings[0]
    assert "carol: not graded" in warnings[1]


@pytest.mark.parametrize(("args", "message"), [
    (["--to", "moodle", "--assignment-id", "42"], "--assignment-id is for Canvas"),
    (["--to", "canvas", "--assignment", "Final Grade"], "Canvas silently drops"),
    (["--to", "canvas", "--roster", "nope.csv"], "nope.csv: cannot read the roster"),
])
def test_export_usage_errors_are_one_line(grades: Path, args: list[str], message: str) -> None:
    result = run(str(grades), *args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert not (grades / "canvas.csv").exists() and not (grades / "moodle.csv").exists()


def test_export_needs_a_grades_folder(tmp_path: Path) -> None:
    result = run(str(tmp_path), "--to", "canvas")
    assert result.returncode == 2 and "no reports/ folder" in result.stderr
    (tmp_path / "reports").mkdir()
    result = run(str(tmp_path), "--to", "canvas")
    assert result.returncode == 2 and "no reports; run `inplace-grader grade" in result.stderr


def test_cells_a_spreadsheet_would_run_are_written_as_text() -> None:
    from grader.exporters.spreadsheet import safe_cell

    assert [safe_cell(v) for v in ("=1+1", "+cmd", "-x", "@SUM(A1)", "\t=1", "alice", "-0.5", 3)] \
        == ["'=1+1", "'+cmd", "'-x", "'@SUM(A1)", "'\t=1", "alice", "-0.5", 3]
    evil = [standing("=HYPERLINK(\"http://x\")", 10)]
    canvas = table(canvas_csv(evil, assignment="=cmd").text)
    assert canvas[0][-1] == "'=cmd" and canvas[2][0] == "'=HYPERLINK(\"http://x\")"
    moodle = table(moodle_csv(evil, assignment="lab", roster=roster(
        "student,email\n=HYPERLINK(\"http://x\"),@evil@example.org\n")).text)
    assert moodle[1][0] == "'@evil@example.org"
