"""The instructor's class report (report.html): valid, self-contained, escaped, right, in both
languages, and as a real browser shows it."""

from __future__ import annotations

import html
import io
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import html5lib
import pytest
from PIL import Image

from grader import feedback
from grader.engine import CheckOptions, check_submission
from grader.errors import UsageError
from grader.exporters.html_report import (
    anonymised,
    class_report_html,
    masked,
)
from grader.grades import REPORTS, write_class_report
from grader.hidden import load_hidden_file
from grader.models import CheckResult, Report
from tests.conftest import ROOT, SharedSandboxes

KNOWN = Path(__file__).parents[1] / "submissions" / "optim"
HIDDEN = ROOT / "examples" / "optim" / "hidden.toml"
SVG = "{http://www.w3.org/2000/svg}"
XMLNS = "{http://www.w3.org/2000/xmlns/}"
BROWSER_TIMEOUT_S = 60
BROWSER = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))),
               None)
needs_browser = pytest.mark.skipif(BROWSER is None, reason="no Chromium or Chrome on PATH "
                                   "(looked for chromium, chromium-browser, google-chrome)")
EVIL = "<script>alert(1)</script>"
EVIL_MESSAGE = '<img src="x" onerror="alert(2)">'


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory,
            sandboxes: SharedSandboxes) -> list[Report]:
    """A small class graded for real, with hidden cases: a correct file, two known mistakes
    that share one failed check and differ in another, a flagged file, an empty file (not
    gradable) and one that raises at import."""
    folder = tmp_path_factory.mktemp("class")
    (folder / "empty.py").write_text("")
    flagged = folder / "flagged.py"
    flagged.write_text((KNOWN / "reference_copy.py").read_text()
                       + "\n\ndef _peek():\n    import sys\n    return sys._getframe(1).f_locals\n")
    files = {"alice": KNOWN / "reference_copy.py", "bob": KNOWN / "sgd_step_data_assign.py",
             "carol": KNOWN / "sgd_step_numpy.py", "gus": flagged, "erin": folder / "empty.py",
             "fay": KNOWN / "raises_at_import.py"}
    options = CheckOptions(device="cpu", hidden=load_hidden_file(HIDDEN))
    sandbox = sandboxes("optim")
    return [check_submission(path, lab="optim", options=options, sandbox=sandbox)
            .model_copy(update={"student": student}) for student, path in files.items()]


@pytest.fixture(scope="module")
def page(reports: list[Report]) -> str:
    return class_report_html(reports, lab="optim")


def parse(html: str) -> ET.Element:
    """The page as a tree, with html5lib in strict mode: any parse error fails the test."""
    parser = html5lib.HTMLParser(strict=True, tree=html5lib.getTreeBuilder("etree"),
                                 namespaceHTMLElements=False)
    return parser.parse(html)


def rows(tree: ET.Element, table: str) -> list[list[str]]:
    """The text of each body cell of the table under `table` (an element id)."""
    found = tree.find(f".//*[@id='{table}']")
    assert found is not None, table
    return [["".join(cell.itertext()).strip() for cell in row]
            for row in found.iterfind(".//tbody/tr")]


def test_the_page_is_valid_html5_with_its_charts_inline(page: str) -> None:
    tree = parse(page)
    assert tree.get("lang") == "en"
    charts = tree.findall(f".//figure/{SVG}svg")
    assert len(charts) == 3  # distribution, per function, per kind
    assert all(chart.get("viewBox") for chart in charts)  # scalable to the page's width
    assert "<?xml" not in page and "<!DOCTYPE svg" not in page
    # Ids are unique on the page, and every reference in a chart points at one of them.
    ids = [element.get("id") for element in tree.iter() if element.get("id")]
    assert len(ids) == len(set(ids))
    references = {match for element in tree.iter() for value in element.attrib.values()
                  for match in re.findall(r"url\(#([^)]+)\)|^#(.+)$", value)}
    assert references and {name for pair in references for name in pair if name} <= set(ids)


def test_the_page_references_nothing_remote(page: str) -> None:
    tree = parse(page)
    for element in tree.iter():
        for name, value in element.attrib.items():
            if name.startswith(XMLNS):
                continue  # a namespace's name, never fetched
            assert not re.match(r"\s*(https?:)?//", value), (element.tag, name, value)
            assert not re.search(r"url\(\s*['\"]?(?!#)", value), (element.tag, name, value)
    assert not tree.findall(".//link") and not tree.findall(".//img")
    assert all(script.get("src") is None for script in tree.iter("script"))
    styles = "".join(style.text or "" for style in tree.iter() if style.tag in (
        "style", f"{SVG}style"))
    assert "@import" not in styles and "url(" not in styles and "@font-face" not in styles
    policy = tree.find(".//meta[@http-equiv='Content-Security-Policy']")
    assert policy is not None and "default-src 'none'" in policy.get("content", "")


def test_student_names_and_messages_are_text_not_markup(reports: list[Report]) -> None:
    bob = next(r for r in reports if r.student == "bob")
    failed = next(c for c in bob.checks if c.status == "failed")
    evil_check = failed.model_copy(update={"message": f"{failed.message} {EVIL_MESSAGE}"})
    evil = bob.model_copy(update={"student": EVIL, "checks": [
        evil_check if c is failed else c for c in bob.checks]})
    html = class_report_html([evil, *reports], lab="optim")  # its words are the example
    assert EVIL not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert EVIL_MESSAGE not in html and "&lt;img src=&#34;x&#34;" in html
    tree = parse(html)
    assert len(list(tree.iter("script"))) == 1  # the page's own sorting script, nothing else
    assert not list(tree.iter("img"))
    assert [EVIL] in [row[:1] for row in rows(tree, "student-table")]
    examples = [row[5] for row in rows(tree, "mistakes")]
    assert any(example.endswith(EVIL_MESSAGE) for example in examples)  # shown, as text


def test_the_numbers_are_right(reports: list[Report], page: str) -> None:
    tree = parse(page)
    table = rows(tree, "student-table")
    by_name = sorted(reports, key=lambda r: r.student)
    assert [row[0] for row in table] == [r.student for r in by_name]  # sorted server-side
    assert [row[1] for row in table] == [f"{r.score:g} / {r.max_score:g}" for r in by_name]
    assert [row[2] for row in table] == [
        f"{100 * r.score / r.max_score:.1f}%" for r in by_name]
    statuses = dict((row[0], row[3]) for row in table)
    assert statuses["erin"] == "Not gradable" and statuses["fay"] == "Did not import"
    # bob and carol both leave the version counter behind, in the same words: one group.
    # Their full-size temporaries differ (aten::mul, a numpy copy): two groups of one.
    groups = [(row[1], int(row[0]), row[4]) for row in rows(tree, "mistakes")]
    version = [students for check, students, _ in groups
               if check.startswith("sgd_step.version_advances")]
    assert version == [2]
    temporaries = sorted((students, operation) for check, students, operation in groups
                         if check.startswith("sgd_step.no_full_size_temporary"))
    assert temporaries == [(1, ""), (1, "aten::mul")]
    # A file that did not import, or was not gradable, is listed apart, not as a mistake.
    assert not [check for check, _, _ in groups if ".runtime" in check]
    apart = {row[0]: row[2] for row in rows(tree, "not-graded")}
    assert apart == {"erin": "empty.py is empty",
                     "fay": "RuntimeError at line 137: half-finished lab"}
    # Hidden checks are shown, marked, with the failures of the graded files.
    hidden = {row[0].split("hidden")[0]: (int(row[1]), int(row[2]))
              for row in rows(tree, "hidden")}
    assert hidden["sgd_step.version_advances@large_lr"] == (2, 2)  # alice, gus | bob, carol
    assert hidden["sgd_step.same_storage@large_lr"] == (3, 1)  # bob only
    assert [row[0] for row in rows(tree, "integrity")] == ["gus"]
    assert "frame introspection" in rows(tree, "integrity")[0][1]
    overview = dict(zip((e.text for e in tree.iterfind(".//section[@id='overview']//dt")),
                        (e.text for e in tree.iterfind(".//section[@id='overview']//dd")),
                        strict=True))
    assert overview["Students"] == "6" and overview["Not gradable"] == "1"
    assert overview["Did not import"] == "1" and overview["Graded"] == "4"


def test_a_mistake_groups_by_its_words_without_the_students_values() -> None:
    assert masked("version 2, lr=0.1, 1.0 MB at 0x7f3a") == masked(
        "version 7, lr=1.5, 4.0 MB at 0x1b")
    report = Report(lab="optim", student="dana", submission="/class/dana.py", score=0,
                    max_score=1, checks=[], grader_version="1", torch_version="2",
                    elapsed_s=0)
    assert anonymised("dana.py: dana's `p` was replaced", report) == "…: …'s `p` was replaced"
    # Whole words only: a student named `p` leaves the tensors' names alone.
    p = report.model_copy(update={"student": "p", "submission": "/class/p.py"})
    assert anonymised("sgd_step: `params[0]` was replaced; p.py says p", p) == (
        "sgd_step: `params[0]` was replaced; … says …")


def test_korean_comes_from_the_catalog(reports: list[Report]) -> None:
    words = feedback.catalog("ko")["report"]
    tree = parse(class_report_html(reports, lab="optim", lang="ko"))
    assert tree.get("lang") == "ko"
    headings = {"".join(h.itertext()).strip() for h in tree.iter("h2")}
    assert {words["distribution"], words["mistakes"], words["table"]} <= headings
    assert tree.findtext(".//title") == words["title"].format(lab="optim")
    assert feedback.catalog("en")["report"]["mistakes"] not in headings


def test_a_page_in_korean_names_each_mistakes_check_in_korean(reports: list[Report]) -> None:
    """The reports were worded in English; the page rebuilt in Korean names their checks from
    the catalog by id (the example message stays as the student's report has it)."""
    page = class_report_html(reports, lab="optim", lang="ko")
    failed = {c.id for r in reports for c in r.checks if c.status == "failed"
              and "@" not in c.id and not c.id.endswith(".runtime")}
    assert failed
    for check_id in failed:
        korean, english = feedback.check_name(check_id, "ko"), feedback.check_name(check_id, "en")
        assert korean != english
        if check_id in page:  # one of the mistakes shown
            assert html.escape(korean, quote=False) in page and english not in page, check_id


def test_written_from_an_out_folder_even_an_empty_one(tmp_path: Path,
                                                      reports: list[Report]) -> None:
    empty = write_class_report(tmp_path, lab="optim")
    assert empty == tmp_path / "report.html"
    page = parse(empty.read_text(encoding="utf-8"))
    nothing = feedback.fill(feedback.catalog("en")["report"]["nothing_graded"], {"lab": "optim"})
    assert nothing in "".join(page.itertext()) and not page.findall(f".//{SVG}svg")
    for report in reports:
        path = tmp_path / REPORTS / f"{report.student}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(report.model_dump_json(), encoding="utf-8")
    written = parse(write_class_report(tmp_path, lab="optim").read_text(encoding="utf-8"))
    assert len(rows(written, "student-table")) == len(reports)
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically, nothing left behind
    with pytest.raises(UsageError, match="several labs"):
        write_class_report(tmp_path, lab="tensor_ops")
    with pytest.raises(UsageError, match="no such folder"):
        write_class_report(tmp_path / "missing", lab="optim")


def test_the_page_reads_each_report_once_and_keeps_none(tmp_path: Path,
                                                       reports: list[Report]) -> None:
    """A generator of reports gives the same page as a list, each report read exactly once:
    `grade` streams them from disk, so the page costs no memory per student."""
    read: list[str] = []

    def one_at_a_time() -> Iterator[Report]:
        for report in reports:
            read.append(report.student)
            yield report

    assert class_report_html(one_at_a_time(), lab="optim") == class_report_html(
        reports, lab="optim")
    assert read == [report.student for report in reports]
    # Only the students asked for (the gradebook's), others in the folder left out.
    for report in reports:
        (tmp_path / REPORTS).mkdir(exist_ok=True)
        (tmp_path / REPORTS / f"{report.student}.json").write_text(report.model_dump_json())
    kept = reports[0].student
    page = parse(write_class_report(tmp_path, lab="optim", students=[kept]).read_text())
    assert [row[0] for row in rows(page, "student-table")] == [kept]


# --- in a real browser -------------------------------------------------------------------------


def browse(page: Path, tmp_path: Path, *args: str, fragment: str = ""
           ) -> subprocess.CompletedProcess[str]:
    """Headless Chromium on `page`, its console logged to stderr; a fresh profile each run."""
    assert BROWSER is not None
    return subprocess.run(
        [BROWSER, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", f"--user-data-dir={tmp_path / 'profile'}", *args,
         page.resolve().as_uri() + fragment],
        capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S, check=True)


def console_errors(stderr: str) -> list[str]:
    """The page's console errors in Chromium's log (uncaught exceptions, console.error)."""
    return [line for line in stderr.splitlines()
            if "CONSOLE" in line and ("Uncaught" in line or "Error" in line)]


def screenshot(page: Path, tmp_path: Path) -> tuple[Image.Image, str]:
    """The page's screenshot (1200 x 2000) and Chromium's log."""
    shot = tmp_path / "shot.png"
    result = browse(page, tmp_path, f"--screenshot={shot}", "--window-size=1200,2000")
    assert shot.is_file(), result.stderr[-2000:]
    with Image.open(shot) as image:
        return image.convert("RGB"), result.stderr


@pytest.mark.slow
@needs_browser
def test_chromium_renders_the_page_without_console_errors(page: str, tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    image, log = screenshot(path, tmp_path)
    assert image.size == (1200, 2000)
    colours = image.getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 50  # text, charts, tables: not a blank page
    pixels = image.convert("L").point(lambda value: 255 if value < 240 else 0)
    inked = sum(pixels.histogram()[255:]) / (image.width * image.height)
    assert inked > 0.03, f"only {inked:.1%} of the screenshot is not white"
    assert console_errors(log) == []


@pytest.mark.slow
@needs_browser
def test_a_script_error_on_a_page_is_caught(tmp_path: Path) -> None:
    """The check above would see an error: a page that throws is caught."""
    path = tmp_path / "broken.html"
    path.write_text('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>x'
                    '</title></head><body><p>x</p><script>throw new Error("x");</script>'
                    "</body></html>", encoding="utf-8")
    _, log = screenshot(path, tmp_path)
    errors = console_errors(log)
    assert len(errors) == 1 and "Uncaught Error: x" in errors[0]


@pytest.mark.slow
@needs_browser
def test_the_sort_script_sorts_the_table_in_chromium(page: str, tmp_path: Path,
                                                     reports: list[Report]) -> None:
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    result = browse(path, tmp_path, "--dump-dom", fragment="#sort=-percent")
    assert console_errors(result.stderr) == []
    dom = html5lib.parse(io.StringIO(result.stdout), treebuilder="etree",
                         namespaceHTMLElements=False)
    table = dom.find(".//table[@id='student-table']")
    assert table is not None and "sorting" in (table.get("class") or "").split()
    percents = [float(cell.get("data-sort") or "nan")
                for cell in table.iterfind(".//tbody/tr/td[3]")]
    assert len(percents) == len(reports)
    assert percents == sorted(percents, reverse=True)
    sorted_by = {th.get("data-key"): th.get("aria-sort") for th in table.iterfind(".//th")}
    assert sorted_by["percent"] == "descending" and sorted_by["student"] is None


def test_each_student_links_to_their_feedback_and_shows_points_per_function(tmp_path: Path
                                                                            ) -> None:
    """The link is the file `grade` wrote for that exact name, relative to the page."""
    from urllib.parse import unquote

    from grader.grades import FEEDBACK, write_class_report
    from grader.student_files import file_stem

    out = tmp_path / "out"
    (out / REPORTS).mkdir(parents=True)
    report = Report(lab="optim", submission="x", score=3, max_score=5, student="Mary Ann",
                    grader_version="0", torch_version="0", elapsed_s=0.0,
                    checks=[CheckResult(id="zero_grad.identity", name="n", function="zero_grad",
                                        kind="identity", device="cpu", passed=False,
                                        status="failed", score=0, max_score=2, message="m"),
                            CheckResult(id="sgd_step.values", name="n", function="sgd_step",
                                        kind="numerics", device="cpu", passed=True,
                                        status="passed", score=3, max_score=3, message="")])
    (out / REPORTS / f"{file_stem('Mary Ann')}.json").write_text(report.model_dump_json())
    (out / FEEDBACK).mkdir()
    (out / FEEDBACK / f"{file_stem('Mary Ann')}.txt").write_text("feedback")
    page = write_class_report(out, lab="optim").read_text()
    href = re.search(r'<a href="(feedback/[^"]+)">Mary Ann</a>', page)
    assert href is not None
    assert (out / unquote(href.group(1))).read_text() == "feedback"
    assert '<span class="lost"><code>zero_grad</code> 0/2</span>' in page
    assert "<code>sgd_step</code> 3/3" in page


def test_one_formula_error_is_one_mistake_however_many_checks_it_fails() -> None:
    def failed(check_id: str, config: str) -> CheckResult:
        return CheckResult(id=check_id, name=check_id, function="Adam", kind="numerics",
                           device="cpu", passed=False, status="failed", score=0, max_score=2,
                           message=f"Adam ({config}) drifts from torch.optim.Adam at step 1")

    def student(name: str) -> Report:
        checks = [failed(f"Adam.trajectory.{case}", case) for case in
                  ("default", "weight_decay", "betas_eps", "float64", "small_grads", "more")]
        return Report(lab="optim", submission=f"{name}.py", score=0, max_score=12,
                      student=name, checks=checks, grader_version="0", torch_version="0",
                      elapsed_s=0.0)

    tree = parse(class_report_html([student("ana"), student("ben")], lab="optim"))
    (row,) = rows(tree, "mistakes")
    assert row[0] == "2" and row[1].startswith("Adam.trajectory.betas_eps")
    assert "and 5 more checks of this function" in row[1]
