"""The instructor's class report: one self-contained HTML page (report.html) from the reports.

What to re-teach on Monday, on one page that opens anywhere and prints: the score distribution,
where the points went (per lab function, per kind of check), the most common mistakes grouped
by what the feedback says, hidden-case results, integrity flags, and every student's standing.

The page fetches nothing (no CDN, fonts or images; a Content-Security-Policy says so to the
browser): the charts are inline SVG drawn with matplotlib, imported only when a chart is drawn.
It is rendered with Jinja2 with autoescaping on, because student names and feedback messages
are untrusted text. Every word of the page's own comes from the message catalog
(locales/*.toml, section [report]), so a translation is one TOML section.
"""

from __future__ import annotations

import io
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any, get_args

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from grader import __version__, feedback
from grader.batch import load_reports, mixed_labs, write_atomically
from grader.errors import UsageError
from grader.models import CheckKind, CheckResult, Report
from grader.summary import (
    BUCKETS,
    GRADED,
    NOT_GRADABLE,
    NOT_IMPORTED,
    ClassSummary,
    Standing,
    standing,
    summarize,
)
from grader.views import STAFF, View

REPORT_FILE = "report.html"
TOP_MISTAKES = 20  # groups shown: the class's story, not every student's
STATUS_KEYS = {GRADED: "status_graded", NOT_IMPORTED: "status_not_imported",
               NOT_GRADABLE: "status_not_gradable"}

# What differs between two students making the same mistake: numbers (versions, sizes, lr,
# indices) and addresses. Masked, the feedback of the same mistake reads the same.
_VALUES = re.compile(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
# The tensor a message names (`params[0].grad`) and the operation (aten::mul): CheckResult
# keeps them only inside its worded text.
_TENSOR = re.compile(r"`([A-Za-z_]\w*(?:\[[^\]`]*\])*(?:\.\w+)*)`")
_OPERATION = re.compile(r"\baten::\w+")


@dataclass(frozen=True)
class Mistake:
    """Students whose checks failed with the same feedback (values masked)."""

    check_id: str  # without a hidden case's `@case`: a mistake is one whichever case caught it
    name: str
    kind: str
    students: int
    points_lost: float
    example: str  # one student's message, their name and file name masked
    tensor: str
    operation: str
    hidden_only: bool  # caught only by hidden checks


@dataclass(frozen=True)
class HiddenResult:
    check_id: str
    name: str
    passed: int
    failed: int


@dataclass(frozen=True)
class Graded:
    """A report with its standing (status, percent, error), computed once."""

    report: Report
    standing: Standing


def text(key: str, lang: str, **params: Any) -> str:
    """One string of the page, from the catalog's [report] section."""
    return feedback.fill(feedback.catalog(lang)["report"][key], params, lang)


def masked(message: str) -> str:
    """The message with student-specific values replaced, so that one mistake groups as one."""
    return _VALUES.sub("#", message)


def anonymised(message: str, report: Report) -> str:
    """The message without the student's name or file name (an example shown to the class's
    instructor should not single anyone out)."""
    owns = {report.student, Path(report.submission).name} - {""}
    for own in sorted(owns, key=len, reverse=True):  # `dana.py` before `dana`
        message = message.replace(own, "…")
    return message


def named_tensor(check: CheckResult) -> str:
    found = _TENSOR.search(check.message)
    return found.group(1) if found else ""


def named_operation(check: CheckResult) -> str:
    found = _OPERATION.search(f"{check.message} {check.got}")
    return found.group(0) if found else ""


def base_id(check_id: str) -> str:
    """`sgd_step.values@large_lr` -> `sgd_step.values`: a hidden case's check is its check."""
    return check_id.partition("@")[0]


def graded_files(entries: Iterable[Graded]) -> list[Graded]:
    """The reports whose checks say something about the code: a file that did not import fails
    every row alike, and one that was not gradable has nothing to say (both listed apart)."""
    return [entry for entry in entries if entry.standing.status == GRADED]


def mistakes(entries: Iterable[Graded], *, top: int = TOP_MISTAKES) -> list[Mistake]:
    """Failed checks grouped by check id and masked message, ranked by students affected, then
    by points lost (as the class summary ranks its most failed checks)."""
    groups: dict[tuple[str, str], list[tuple[int, Report, CheckResult]]] = defaultdict(list)
    for index, entry in enumerate(entries):  # an index: ids may be empty outside a batch
        for check in entry.report.checks:
            if check.status == "failed":
                groups[base_id(check.id), masked(check.message)].append(
                    (index, entry.report, check))
    found = []
    for (check_id, _), members in groups.items():
        # A visible check names the mistake without a hidden case's name in it.
        _, report, first = next((m for m in members if not m[2].hidden), members[0])
        found.append(Mistake(
            check_id=check_id, name=first.name, kind=first.kind,
            students=len({index for index, _, _ in members}),
            points_lost=sum(c.max_score - c.score for _, _, c in members),
            example=anonymised(first.message, report), tensor=named_tensor(first),
            operation=named_operation(first),
            hidden_only=all(c.hidden for _, _, c in members)))
    found.sort(key=lambda m: (-m.students, -m.points_lost, m.check_id, m.example))
    return found[:top]


def hidden_results(entries: Iterable[Graded]) -> list[HiddenResult]:
    """Per hidden check, how many graded files passed and failed it (most failed first)."""
    passed: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    names: dict[str, str] = {}
    for entry in entries:
        for check in entry.report.checks:
            if check.hidden and check.status != "skipped":
                (passed if check.passed else failed)[check.id] += 1
                names.setdefault(check.id, check.name)
    return sorted((HiddenResult(i, names[i], passed[i], failed[i]) for i in names),
                  key=lambda h: (-h.failed, h.check_id))


def points_lost(entries: Iterable[Graded]) -> tuple[dict[str, float], dict[str, float]]:
    """Points lost summed over the class, per lab function (the lab's order) and per kind of
    check (the CheckKind order); every function and kind graded is listed, a zero included."""
    by_function: dict[str, float] = {}
    by_kind: dict[str, float] = {}
    for entry in entries:
        for check in entry.report.checks:
            if check.status != "skipped":
                lost = check.max_score - check.score if check.status == "failed" else 0.0
                by_function[check.function] = by_function.get(check.function, 0.0) + lost
                by_kind[check.kind] = by_kind.get(check.kind, 0.0) + lost
    kinds = {kind: by_kind[kind] for kind in get_args(CheckKind) if kind in by_kind}
    return by_function, kinds


def protections(reports: list[Report]) -> list[tuple[str, int]]:
    """Each protection any report was graded under, with how many reports had it (a file
    that was not gradable never reached the sandbox's later layers)."""
    counts: Counter[str] = Counter()
    for report in reports:
        counts.update(dict.fromkeys(report.protections, 1))
    return list(counts.items())


def grading_options(reports: list[Report], lang: str) -> list[tuple[str, str]]:
    """What the reports record of how they were graded: versions, devices, hidden cases, where
    they ran. More than one value on a line means the class was graded under mixed settings."""
    checks = [c for r in reports for c in r.checks]
    cases = {c.id.partition("@")[2] for c in checks if "@" in c.id} - {"hidden"}
    withheld = {c.id for c in checks if c.hidden and "@" not in c.id}
    where = {r.graded_on for r in reports if r.graded_on}
    values: dict[str, set[str]] = {
        "option_grader": {r.grader_version for r in reports},
        "option_torch": {r.torch_version for r in reports},
        "option_devices": {c.device for c in checks if c.status != "skipped"},
        "option_skipped_devices": {c.device for c in checks if c.status == "skipped"},
        "option_hidden_cases": cases,
        "option_withheld": withheld,
        "option_graded_on": where or {text("here", lang)},
    }
    return [(text(key, lang), ", ".join(sorted(found)) or "—") for key, found in values.items()]


def class_report_html(reports: list[Report], *, lab: str, lang: str = "en") -> str:
    """The class report as one HTML page; pure (reports in, text out), so the CLI, a notebook
    or a test can all call it."""
    entries = sorted((Graded(r, standing(r)) for r in reports),
                     key=lambda e: (e.standing.student.casefold(), e.standing.student))
    summary = summarize([e.standing for e in entries])
    graded = graded_files(entries)
    by_function, by_kind = points_lost(graded)
    return _environment().get_template("report.html.j2").render(
        lang=lang, lab=lab, version=__version__, t=partial(text, lang=lang),
        status=_status_words(lang), students=[e.standing for e in entries],
        graded_count=len(graded), overview=_overview(summary, len(entries), lang),
        charts=_charts(summary, by_function, by_kind) if graded else {},
        mistakes=mistakes(graded), hidden=hidden_results(graded),
        problems=[e.standing for e in entries if e.standing.status != GRADED],
        flagged=[e.standing for e in entries if e.standing.integrity],
        protections=protections(reports), options=grading_options(reports, lang))


def render(reports: Sequence[Report], *, view: View = STAFF, lang: str = "en") -> str:
    """The page in the exporters' interface: meant for staff; a student's view of the same
    class leaves out what that view withholds. The lab is the reports' own."""
    labs = {report.lab for report in reports}
    if len(labs) != 1:
        raise ValueError(f"a class report is of one lab, not {sorted(labs) or 'none'}")
    return class_report_html([view.of(report).report for report in reports], lab=labs.pop(),
                             lang=lang)


def write_class_report(out: Path, *, lab: str, lang: str = "en") -> Path:
    """Write OUT/report.html from the reports in OUT/reports (as `grade` wrote them), at once
    or not at all: a browser open on the old page never reads half a new one."""
    if not out.is_dir():
        raise UsageError(f"{out}: no such folder; run `inplace-grader grade SUBMISSIONS "
                         f"--lab {lab} --out {out}` first")
    reports = load_reports(out)
    labs = {report.lab for report in reports}
    if labs - {lab}:
        raise UsageError(mixed_labs(out, labs | {lab}))
    path = out / REPORT_FILE
    write_atomically(path, class_report_html(reports, lab=lab, lang=lang))
    return path


@cache
def _environment() -> Environment:
    """One Jinja2 environment (templates compiled once); autoescaping on for every template,
    since what it shows comes from students."""
    return Environment(loader=PackageLoader("grader.exporters", "templates"),
                       autoescape=select_autoescape(("html", "j2"), default=True),
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                       keep_trailing_newline=True)


def _status_words(lang: str) -> dict[str, str]:
    return {status: text(key, lang) for status, key in STATUS_KEYS.items()}


def _overview(summary: ClassSummary, students: int, lang: str) -> list[tuple[str, str]]:
    return [
        (text("students", lang), f"{students}"),
        (text("status_graded", lang), f"{summary.graded - summary.not_imported}"),
        (text("status_not_imported", lang), f"{summary.not_imported}"),
        (text("status_not_gradable", lang), f"{summary.errors}"),
        (text("mean", lang), f"{summary.mean_percent:.1f}%"),
        (text("median", lang), f"{summary.median_percent:.1f}%"),
    ]


def _charts(summary: ClassSummary, by_function: Mapping[str, float],
            by_kind: Mapping[str, float]) -> dict[str, Markup]:
    """The page's charts as inline SVG. Their only words are numbers and the lab's own
    identifiers (functions, check kinds); titles and captions are the page's, translated."""
    bands = [f"{i * 100 // BUCKETS}–{(i + 1) * 100 // BUCKETS}" for i in range(BUCKETS)]
    return {"distribution": _bar_chart(bands, summary.distribution, salt="distribution",
                                       integer=True),
            "functions": _bar_chart(list(by_function), list(by_function.values()),
                                    salt="functions", horizontal=True),
            "kinds": _bar_chart(list(by_kind), list(by_kind.values()), salt="kinds",
                                horizontal=True)}


def _bar_chart(labels: list[str], values: list[float] | list[int], *, salt: str,
               horizontal: bool = False, integer: bool = False) -> Markup:
    """One bar chart as an inline <svg> element. Deterministic (a fixed hash salt, no date)
    and small (text stays text); the salt differs per chart so that their ids never clash."""
    import matplotlib
    from matplotlib.figure import Figure  # no pyplot: no global figure state
    from matplotlib.ticker import MaxNLocator

    with matplotlib.rc_context({"svg.hashsalt": f"inplace-grader-{salt}", "svg.fonttype": "none",
                                "font.size": 9, "axes.spines.top": False,
                                "axes.spines.right": False}):
        height = 0.6 + 0.3 * len(labels) if horizontal else 2.6
        figure = Figure(figsize=(7.0, height), layout="constrained")
        axes = figure.subplots()
        if horizontal:
            bars = axes.barh(labels, values, color="#4c72b0")
            axes.invert_yaxis()  # the first function on top, as the lab lists them
        else:
            bars = axes.bar(labels, values, color="#4c72b0")
        axes.bar_label(bars, fmt="%g", padding=2)
        axis = axes.xaxis if horizontal else axes.yaxis
        axis.set_major_locator(MaxNLocator(integer=integer))
        if horizontal:  # room for the bars' labels
            axes.margins(x=0.08)
        else:
            axes.margins(y=0.12)
        buffer = io.StringIO()
        # No date (deterministic) and no Dublin Core block (its URIs are not for a page).
        figure.savefig(buffer, format="svg", metadata=dict.fromkeys(
            ("Date", "Creator", "Format", "Type")))
    return Markup(_inline(buffer.getvalue()))


def _inline(svg: str) -> str:
    """matplotlib's SVG file as an element of the page: without the XML prolog and DOCTYPE, and
    without the ids of its groups (`figure_1`, `axes_1`: the same in every chart, never
    referenced); the ids of its clip paths and markers are kept, unique per chart."""
    return re.sub(r'<g id="[^"]*"', "<g", svg[svg.index("<svg"):])
