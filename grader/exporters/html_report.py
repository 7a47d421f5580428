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
from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path
from typing import Any, get_args
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from grader import __version__, feedback
from grader.models import CheckKind, CheckResult, Report
from grader.student_files import file_stem
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
from grader.views import View

TOP_MISTAKES = 10  # mistakes shown unfolded: the class's story; the rest fold away
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
    also: int = 0  # more checks of the same function and kind that the same mistake failed


@dataclass(frozen=True)
class HiddenResult:
    check_id: str
    name: str
    passed: int
    failed: int


def text(key: str, lang: str, **params: Any) -> str:
    """One string of the page, from the catalog's [report] section."""
    return feedback.fill(feedback.catalog(lang)["report"][key], params, lang)


def masked(message: str) -> str:
    """The message with student-specific values replaced, so that one mistake groups as one."""
    return _VALUES.sub("#", message)


def anonymised(message: str, report: Report) -> str:
    """The message without the student's name or file name (an example shown to the class's
    instructor should not single anyone out). Whole words only: a student called `p` leaves
    `params[0]` as it is."""
    owns = {report.student, Path(report.submission).name} - {""}
    for own in sorted(owns, key=len, reverse=True):  # `dana.py` before `dana`
        message = re.sub(rf"(?<![\w.]){re.escape(own)}(?![\w])", "…", message)
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


@dataclass
class _Group:
    """One mistake while the class is tallied: who made it, what it cost, one example."""

    students: set[int] = field(default_factory=set)
    points_lost: float = 0.0
    example: CheckResult | None = None  # its message already anonymised: no report is kept
    hidden_only: bool = True

    def add(self, index: int, report: Report, check: CheckResult) -> None:
        self.students.add(index)
        self.points_lost += check.max_score - check.score
        # A visible check names the mistake without a hidden case's name in it.
        if self.example is None or (self.example.hidden and not check.hidden):
            self.example = check.model_copy(update={
                "message": anonymised(check.message, report), "expected": "", "hint": ""})
        self.hidden_only = self.hidden_only and check.hidden


@dataclass
class ClassTally:
    """What the page says of a class, gathered one report at a time: a report is read, added
    and dropped, so the page's memory does not grow with the class (measured by
    bench/class_report.py)."""

    standings: list[Standing] = field(default_factory=list)
    groups: dict[tuple[tuple[str, ...], str], _Group] = field(default_factory=dict)
    hidden_passed: Counter[str] = field(default_factory=Counter)
    hidden_failed: Counter[str] = field(default_factory=Counter)
    hidden_names: dict[str, str] = field(default_factory=dict)
    by_function: dict[str, float] = field(default_factory=dict)
    by_kind: dict[str, float] = field(default_factory=dict)
    protections: Counter[str] = field(default_factory=Counter)
    options: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def add(self, report: Report) -> None:
        score = standing(report)
        self.standings.append(score)
        self.protections.update(dict.fromkeys(report.protections, 1))
        self._add_options(report)
        if score.status != GRADED:
            # A file that did not import fails every row alike, and one that was not gradable
            # has nothing to say: both are listed apart, not counted as mistakes.
            return
        index = len(self.standings)  # ids may be empty outside a batch
        for check in report.checks:
            if check.status == "skipped":
                continue
            lost = check.max_score - check.score if check.status == "failed" else 0.0
            self.by_function[check.function] = self.by_function.get(check.function, 0.0) + lost
            self.by_kind[check.kind] = self.by_kind.get(check.kind, 0.0) + lost
            if check.hidden:
                (self.hidden_passed if check.passed else self.hidden_failed)[check.id] += 1
                self.hidden_names.setdefault(check.id, check.name)
        for pattern, failed in _mistakes_of(report).items():
            group = self.groups.setdefault(pattern, _Group())
            for check in failed:
                group.add(index, report, check)

    def _add_options(self, report: Report) -> None:
        options = self.options
        options["option_grader"].add(report.grader_version)
        options["option_torch"].add(report.torch_version)
        if report.graded_on:
            options["option_graded_on"].add(report.graded_on)
        for check in report.checks:
            key = "option_skipped_devices" if check.status == "skipped" else "option_devices"
            options[key].add(check.device)
            case = check.id.partition("@")[2]
            if case and case != "hidden":
                options["option_hidden_cases"].add(case)
            if check.hidden and not case:
                options["option_withheld"].add(check.id)

    @property
    def graded(self) -> int:
        return sum(s.status == GRADED for s in self.standings)

    def mistakes(self) -> list[Mistake]:
        """What students did wrong (see _mistakes_of), ranked by students affected, then by
        points lost (as the class summary ranks its most failed checks)."""
        found = [Mistake(check_id=pattern[0], name=group.example.name, kind=group.example.kind,
                         students=len(group.students), points_lost=group.points_lost,
                         example=group.example.message,
                         tensor=named_tensor(group.example),
                         operation=named_operation(group.example),
                         hidden_only=group.hidden_only, also=len(pattern) - 1)
                 for (pattern, _), group in self.groups.items()
                 if group.example is not None]
        found.sort(key=lambda m: (-m.students, -m.points_lost, m.check_id, m.example))
        return found

    def hidden_results(self) -> list[HiddenResult]:
        """Per hidden check, how many graded files passed and failed it (most failed first)."""
        return sorted((HiddenResult(i, name, self.hidden_passed[i], self.hidden_failed[i])
                       for i, name in self.hidden_names.items()),
                      key=lambda h: (-h.failed, h.check_id))

    def points_lost(self) -> tuple[dict[str, float], dict[str, float]]:
        """Points lost per lab function (in the order the reports list them: the lab's) and
        per kind of check (CheckKind's order); every function and kind graded is listed, a
        zero included."""
        kinds = {kind: self.by_kind[kind] for kind in get_args(CheckKind) if kind in self.by_kind}
        return dict(self.by_function), kinds

    def grading_options(self, lang: str) -> list[tuple[str, str]]:
        """How the reports were graded: versions, devices, hidden cases, where they ran. More
        than one value on a line means the class was graded under mixed settings."""
        keys = ("option_grader", "option_torch", "option_devices", "option_skipped_devices",
                "option_hidden_cases", "option_withheld", "option_graded_on")
        found = {key: set(self.options.get(key, set())) for key in keys}
        found["option_graded_on"] = found["option_graded_on"] or {text("here", lang)}
        return [(text(key, lang), ", ".join(sorted(values)) or "—")
                for key, values in found.items()]


def _mistakes_of(report: Report) -> dict[tuple[tuple[str, ...], str], list[CheckResult]]:
    """A student's failed checks as mistakes: one per function and kind of check, named by the
    checks it failed (a hidden case's check is its check) and the words of the first of them
    (values masked: a temporary from `aten::mul` is not one from `aten::sub`). One formula
    error in `Adam` that fails its six trajectory checks is one mistake, and two students who
    made it fail the same six: one mistake of two students, not six rows."""
    by_function: dict[tuple[str, str], list[CheckResult]] = defaultdict(list)
    for check in report.checks:
        if check.status == "failed":
            by_function[(check.function, check.kind)].append(check)
    found = {}
    for failed in by_function.values():
        checks = tuple(sorted({base_id(c.id) for c in failed}))
        first = min(failed, key=lambda c: (base_id(c.id), c.id))
        found[(checks, masked(first.message))] = failed  # two causes, two mistakes
    return found


def tally(reports: Iterable[Report]) -> ClassTally:
    counted = ClassTally()
    for report in reports:
        counted.add(report)
    return counted


def feedback_href(student: str) -> str:
    """The relative link from OUT/report.html to the student's OUT/feedback file, as `grade`
    names it (student_files.file_stem), quoted for a URL (a stem holds `%`)."""
    return "feedback/" + quote(f"{file_stem(student)}.txt")


def class_report_html(reports: Iterable[Report], *, lab: str, lang: str = "en") -> str:
    """The class report as one HTML page; pure (reports in, text out), so the CLI, a notebook
    or a test can all call it. `reports` may be a generator: each is read once."""
    counted = tally(reports)
    students = sorted(counted.standings, key=lambda s: (s.student.casefold(), s.student))
    summary = summarize(students)
    by_function, by_kind = counted.points_lost()
    return _environment().get_template("report.html.j2").render(
        lang=lang, lab=lab, version=__version__, t=partial(text, lang=lang),
        status=_status_words(lang), students=students,
        feedback={s.student: feedback_href(s.student) for s in students},
        graded_count=counted.graded, overview=_overview(summary, len(students), lang),
        charts=_charts(summary, by_function, by_kind) if counted.graded else {},
        mistakes=[in_language(m, lang) for m in counted.mistakes()], shown_mistakes=TOP_MISTAKES,
        hidden=counted.hidden_results(),
        problems=[s for s in students if s.status != GRADED],
        flagged=[s for s in students if s.integrity],
        protections=list(counted.protections.items()),
        options=counted.grading_options(lang))


def render(reports: Sequence[Report], *, view: View, lang: str) -> str:
    """The page in the exporters' interface. It is for course staff only (it names students
    beside their integrity findings and shows hidden results): no other view has one."""
    if not view.staff:
        raise ValueError("the class report is for course staff: render it with grader.views.STAFF")
    labs = {report.lab for report in reports}
    if len(labs) != 1:
        raise ValueError(f"a class report is of one lab, not {sorted(labs) or 'none'}")
    return class_report_html(reports, lab=labs.pop(), lang=lang)


@cache
def _environment() -> Environment:
    """One Jinja2 environment (templates compiled once); autoescaping on for every template,
    since what it shows comes from students."""
    return Environment(loader=PackageLoader("grader.exporters", "templates"),
                       autoescape=select_autoescape(("html", "j2"), default=True),
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                       keep_trailing_newline=True)


def in_language(mistake: Mistake, lang: str) -> Mistake:
    """The mistake with its check named in the page's language (a lab check's name comes from
    the catalog by its id; a hidden case's or a runtime row's keeps the name it was graded
    with). The example message stays as the student's report worded it."""
    if "@" in mistake.check_id or mistake.check_id.endswith(".runtime"):
        return mistake
    return replace(mistake, name=feedback.check_name(mistake.check_id, lang))


def _status_words(lang: str) -> dict[str, str]:
    return {status: text(key, lang) for status, key in STATUS_KEYS.items()}


def _overview(summary: ClassSummary, students: int, lang: str) -> list[tuple[str, str]]:
    return [
        (text("students", lang), f"{students}"),
        (text("status_graded", lang), f"{summary.graded}"),
        (text("status_not_imported", lang), f"{summary.not_imported}"),
        (text("status_not_gradable", lang), f"{summary.not_gradable}"),
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
