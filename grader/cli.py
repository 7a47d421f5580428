"""Command line: parse, call the library, render, exit. No grading logic lives here.

Exit codes are grader.errors.ExitCode. Every usage error, the library's (grader.errors.
UsageError and its kinds) and click's own (a missing argument, an unknown option), ends the
command in one place, `GraderGroup.main`: one line on stderr, `inplace-grader: error: ...`,
exit code 2.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click
from pydantic import ValidationError
from rich.console import Console

from grader.distribution import running_checkout
from grader.errors import ExitCode, UsageError
from grader.formats import FORMATS
from grader.labs import LAB_FILES

PROG = "inplace-grader"
# --root of the builders: None is the installed package (grader/distribution.py).
SOLUTIONS_ROOT_HELP = ("A course's own copy of the project, whose solutions/ to use (default: "
                       "the ones installed with the grader).")
WHEEL_ROOT_HELP = ("A course's own copy of the project, whose grader to ship (default: the "
                   "installed grader).")
LABS = ", ".join(sorted(LAB_FILES))  # for --help (the lab folders' names, no torch)


def _usage_error(message: str) -> NoReturn:
    raise UsageError(message)


def _one_line(message: str) -> str:
    return " ".join(message.split())


def _click_message(exc: click.ClickException) -> str:
    """click's error as one line, with where to read the usage (click prints four lines)."""
    message = _one_line(exc.format_message())
    context = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and context is not None:
        return f"{message} (see `{context.command_path} --help`)"
    return message


class GraderGroup(click.Group):
    """The command group; its `main` maps what a command lets through to an exit code."""

    def main(self, *args: Any, **kwargs: Any) -> NoReturn:  # type: ignore[override]
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.exceptions.Abort:  # Ctrl-C while click had control
            sys.exit(ExitCode.INTERRUPTED)
        except click.ClickException as exc:
            click.echo(f"{PROG}: error: {_click_message(exc)}", err=True)
            sys.exit(ExitCode.USAGE)
        except UsageError as exc:
            click.echo(f"{PROG}: error: {_one_line(str(exc))}", err=True)
            sys.exit(ExitCode.USAGE)
        sys.exit(code if isinstance(code, int) else ExitCode.OK)


def _load_override(path: Path | None):  # -> RubricOverride | None
    from grader.models import RubricOverride

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    if path is None:
        return None
    try:
        with path.open("rb") as handle:
            return RubricOverride.model_validate(tomllib.load(handle))
    except OSError as exc:
        _usage_error(f"{path}: cannot read the rubric file ({exc.strerror})")
    except tomllib.TOMLDecodeError as exc:
        _usage_error(f"{path}: not valid TOML ({exc})")
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        _usage_error(f"{path}: {where}: {first['msg']} (keys: weights, policies)")
    return None


def _load_hidden(path: Path | None):  # -> HiddenFile | None
    from grader.hidden import load_hidden_file

    return None if path is None else load_hidden_file(path)  # a UsageError: one line


def _formatted(report: Any, output_format: str, options: Any) -> str:
    """One report in a `--format` (grader/formats.py). The JSON report is the whole record;
    a platform's file is what its students see (hidden results withheld until released)."""
    from grader.formats import render
    from grader.hidden import released
    from grader.views import STAFF, View

    view = STAFF if output_format == "json" else View(release=released(options.hidden))
    return render(output_format, [report], view=view, lang=options.lang)


LANGUAGES = ["en", "ko"]  # the locales in grader/locales


def lang_option(default: str | None = None, what: str = "the feedback") -> Callable[..., Any]:
    """--lang, declared once; a platform's commands fix a default, `check` and `grade` read
    the locale."""
    return click.option("--lang", type=click.Choice(LANGUAGES), default=default,
                        show_default=default is not None,
                        help=f"Language of {what}" + ("." if default else
                                                      " (default: from the locale)."))


timeout_option = click.option(
    "--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
    help="Wall-time limit per function's checks, seconds.")


def check_options(*, device: str, lang: str | None, timeout: float, memory_mib: int,
                  rubric_path: Path | None, hidden: Any, integrity: str) -> Any:
    """The CheckOptions of `check` and `grade`, from their shared options."""
    from grader import feedback
    from grader.engine import CheckOptions
    from grader.models import Limits

    return CheckOptions(device=device, lang=lang or feedback.default_language(),
                        limits=Limits(timeout_s=timeout, memory_bytes=memory_mib * 1024**2),
                        rubric_override=_load_override(rubric_path), hidden=hidden,
                        integrity=integrity)


def grading_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options `check` and `grade` share: device, language, limits, rubric, hidden."""
    options = [
        click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
                     show_default=True),
        lang_option(),
        timeout_option,
        click.option("--memory", "memory_mib", type=click.IntRange(min=256), default=4096,
                     show_default=True, help="Memory limit per submission, in MiB."),
        click.option("--rubric", "rubric_path", type=click.Path(path_type=Path),
                     help="Instructor TOML file: [weights] per check id, [policies] on/off."),
        click.option("--hidden", "hidden_path", type=click.Path(path_type=Path),
                     help="Instructor TOML file of hidden cases and withheld checks "
                          "(see docs/hidden-cases.md)."),
        click.option("--integrity", type=click.Choice(["flag", "fail"]), default="flag",
                     show_default=True,
                     help="Source that reaches for introspection, raw memory or the grader's "
                          "meters: flag it for review, or fail the functions that do."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.group(cls=GraderGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="inplace-grader")
def main() -> None:
    """Grade PyTorch in-place semantics: identity, storage, version counter, allocations."""
    import os

    from grader.labs import check_lab_folders
    from grader.sandbox.limits import configured_uid

    configured_uid(os.environ)  # a typo here would otherwise surface mid-run
    check_lab_folders()  # INPLACE_GRADER_LABS, likewise


@main.command()
@click.argument("submission", type=click.Path(path_type=Path))
@click.option("--lab", help=f"Lab name: {LABS} (default: inferred from the file name).")
@click.option("--format", "output_format",
              type=click.Choice(["text", *FORMATS]),
              default="text",
              show_default=True)
@grading_options
@click.option("--debug", is_flag=True, help="Show tracebacks and the submission's output.")
@click.option("--failed-only", is_flag=True,
              help="List only the failed checks (and a line per function that passed).")
@click.option("--watch", is_flag=True,
              help="Grade again each time the file (the folder, the notebook) is saved, "
                   "with the sandbox kept warm; Ctrl-C stops. --format json: a line per run.")
@click.option("--explain", "explain_id", metavar="CHECK_ID",
              help="Print a failed check's reproducer: code to run next to your file that "
                   "shows the failure (the id is shown beside each failed check).")
def check(submission: Path, lab: str | None, device: str, output_format: str,
          lang: str | None, timeout: float, memory_mib: int, rubric_path: Path | None,
          hidden_path: Path | None, integrity: str, debug: bool, failed_only: bool,
          watch: bool, explain_id: str | None) -> None:
    """Grade one submission (a .py file, a folder or a notebook)."""
    from grader.engine import DoesNotImport, check_submission, error_report
    from grader.explain import failed_check, known_check
    from grader.labs import check_lab_name, infer_lab_name
    from grader.render import print_import_failure, render_text
    from grader.submission import SubmissionError

    if watch and output_format not in ("text", "json"):
        _usage_error(f"--watch prints text or json, not {output_format}; run "
                     f"`check --format {output_format}` once without --watch")
    if explain_id is not None:  # a typo is told before anything is graded
        if output_format != "text":
            _usage_error("--explain prints code: it takes no --format")
        if watch:
            _usage_error("--explain prints one check's code once: it takes no --watch")
        known = check_lab_name(lab) if lab else infer_lab_name(submission)
        if known is not None:
            known_check(known, explain_id)
    options = check_options(device=device, lang=lang, timeout=timeout, memory_mib=memory_mib,
                            rubric_path=rubric_path, hidden=_load_hidden(hidden_path),
                            integrity=integrity)
    lang = options.lang
    if watch:
        _watch(submission, lab=lab, options=options, as_json=output_format == "json",
               debug=debug, failed_only=failed_only)
    try:
        report = check_submission(submission, lab=lab, options=options,
                                  fast_answers=output_format == "text")
    except DoesNotImport as exc:  # told without a worker: the block the full report shows
        console = Console(highlight=False)
        print_import_failure(console, exc.failure, lang=lang, debug=debug)
        sys.exit(ExitCode.FAILED)
    except SubmissionError as exc:  # nothing at that path, or unreadable: one line, exit 2
        known = lab or infer_lab_name(submission)
        if output_format != "text" and known is not None:
            # A pipeline reads its result file whatever happened: the reason, as one.
            failed = error_report(lab=known, submission=str(submission), error=str(exc),
                                  options=options)
            click.echo(_formatted(failed, output_format, options), nl=False)
        raise
    except UsageError:
        raise  # one line, exit 2 (GraderGroup.main)
    except Exception as exc:  # an internal error: one line unless --debug
        if debug:
            raise
        _internal_error(exc)
    if report.error and output_format == "text":  # nothing to grade: one line, exit 2
        _usage_error(report.error)
    if explain_id is not None and report.import_error is None:
        explained = failed_check(report, known_check(report.lab, explain_id))
        if not explained.reproducer:
            click.echo(f"{PROG}: {explain_id} failed, but no plain-Python reproducer shows "
                       f"this failure: {explained.message}", err=True)
            sys.exit(report.return_code)
        click.echo(explained.reproducer, nl=False)
        sys.exit(report.return_code)
    if output_format != "text":
        click.echo(_formatted(report, output_format, options), nl=False)
    else:
        render_text(report, Console(highlight=False), lang=lang, debug=debug,
                    failed_only=failed_only)
    sys.exit(report.return_code)


def _internal_error(exc: Exception) -> NoReturn:
    click.echo(f"{PROG}: internal error: {exc.__class__.__name__}: {exc} "
               "(run again with --debug and report it)", err=True)
    sys.exit(ExitCode.INTERNAL)


def _watch(submission: Path, *, lab: str | None, options: Any, as_json: bool, debug: bool,
           failed_only: bool) -> NoReturn:
    """`check --watch`: the loop of grader/watch, drawn on the screen or a JSON line per run.
    Ctrl-C while it waits for a save ends it with 0; during a run, with 130."""
    from grader.engine import error_report
    from grader.views import STAFF
    from grader.watch import Run, watch_submission
    from grader.watch.screen import draw

    console = Console(highlight=False)

    def on_run(run: Run) -> None:
        if not as_json:
            draw(run, console, lang=options.lang, debug=debug, failed_only=failed_only)
            return
        report = run.report or error_report(lab=run.lab, submission=str(run.path),
                                             error=run.problem, options=options)
        click.echo(STAFF.of(report).report.model_dump_json())  # one line, flushed

    try:
        watch_submission(submission, lab=lab, options=options, on_run=on_run,
                         fast_answers=not as_json)
    except KeyboardInterrupt:  # during a run (while waiting, the loop just ends)
        sys.exit(ExitCode.INTERRUPTED)
    except UsageError:
        raise  # one line, exit 2 (GraderGroup.main)
    except Exception as exc:  # an internal error: one line unless --debug
        if debug:
            raise
        _internal_error(exc)
    sys.exit(ExitCode.OK)


@main.command()
@click.argument("submissions", type=click.Path(path_type=Path))
@click.option("--lab", required=True, help=f"Lab name: {LABS}.")
@click.option("-o", "--output", "--out", "out", required=True,
              type=click.Path(path_type=Path, file_okay=False),
              help="Folder for the gradebook, reports and feedback (created if missing).")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Parallel workers (default: the number of cores).")
@grading_options
@click.option("--release", is_flag=True,
              help="Show hidden results in the students' feedback files (no regrading).")
@click.option("--force", is_flag=True, help="Regrade submissions already graded.")
@click.option("--cluster", default="", metavar="ADDRESS",
              help="Grade on a Dask cluster: a scheduler's tcp://HOST:PORT, or local[:N] "
              "(N worker processes here); needs inplace-grader[cluster].")
@click.option("-q", "--quiet", is_flag=True,
              help="Print only the closing line (no progress, no summary).")
@click.option("-v", "--verbose", is_flag=True,
              help="Print a line per student as they are graded, instead of the progress bar.")
def grade(submissions: Path, lab: str, out: Path, workers: int | None, device: str,
          lang: str | None, timeout: float, memory_mib: int, rubric_path: Path | None,
          hidden_path: Path | None, integrity: str, release: bool, force: bool,
          cluster: str, quiet: bool, verbose: bool) -> None:
    """Grade a class: SUBMISSIONS is a folder of files or folders named by student, or an
    nbgrader course (submitted/<student>/<assignment>/)."""
    import os

    from grader.batch import (
        BatchOptions,
        Executor,
        LocalExecutor,
        check_instructor_files,
        grade_class,
        iter_failures,
    )
    from grader.hidden import released
    from grader.labs import check_lab_name
    from grader.models import Report
    from grader.render import progress_bar
    from grader.summary import counts_text, standing, summary_text

    if not submissions.is_dir():
        _usage_error(f"{submissions}: not a folder of submissions")
    check_lab_name(lab)  # a UsageError: one line, exit 2 (GraderGroup.main)
    executor: Executor = LocalExecutor()
    if cluster:
        from grader.batch.cluster import ClusterExecutor  # Dask: a UsageError where missing

        executor = ClusterExecutor(cluster)
    hidden = _load_hidden(hidden_path)
    check = check_options(device=device, lang=lang, timeout=timeout, memory_mib=memory_mib,
                          rubric_path=rubric_path, hidden=hidden, integrity=integrity)
    lang = check.lang
    options = BatchOptions(lab=lab, out=out, workers=workers or os.cpu_count() or 1,
                           force=force, release=released(hidden, release_flag=release),
                           check=check)
    if quiet and verbose:
        _usage_error("-q and -v ask for less and more at once; pass one of them")
    check_instructor_files(options)
    console = Console(highlight=False, stderr=True)

    def each(student: str, report: Report, reused: bool) -> None:
        row = standing(report)
        again = ", reused" if reused else ""
        console.print(f"{student}: {row.status}{again}, {row.score:g}/{row.max_score:g}",
                      markup=False)

    try:
        if quiet or verbose:
            result = grade_class(submissions, options=options, executor=executor,
                                 on_progress=each if verbose else None)
        else:
            with progress_bar(console, lang=lang) as bar:
                result = grade_class(submissions, options=options, executor=executor,
                                     on_start=bar.start, on_progress=bar.advance)
    except KeyboardInterrupt:
        console.print(f"interrupted: every report graded so far is kept in {out}; "
                      "run the same command again to resume")
        sys.exit(ExitCode.INTERRUPTED)
    if result.students == 0:
        _usage_error(f"{submissions}: no submissions found (expected files or folders named "
                     "by student, or an nbgrader submitted/ folder)")
    assert result.summary is not None
    if not quiet:
        click.echo(summary_text(result.summary), nl=False)  # plain text: never wrapped
        for line in iter_failures(result):
            click.echo(f"not graded: {line}")
    rate = (result.graded / result.elapsed_s) if result.elapsed_s else 0.0
    where = f" on {result.cluster_workers} Dask workers" if cluster else ""
    click.echo(f"{counts_text(result.summary)} ({result.reused} of them reused from an "
               f"earlier run); mean {result.summary.mean_percent:.1f}%; "
               f"{result.elapsed_s:.1f} s ({rate:.1f}/s){where}; "
               f"gradebook: {out / 'gradebook.csv'}; class report: {out / 'report.html'}")


@main.command()
@click.argument("grades_dir", type=click.Path(path_type=Path, file_okay=False))
@lang_option(what="the page")
def report(grades_dir: Path, lang: str | None) -> None:
    """Rebuild GRADES_DIR/report.html, the class report page, from the reports that `grade`
    wrote there (for instance in another language)."""
    from grader import feedback
    from grader.grades import REPORTS, gradebook_students, labs_in, mixed_labs, write_class_report

    if not (grades_dir / REPORTS).is_dir():
        _usage_error(f"{grades_dir}: no {REPORTS}/ folder; pass the --out folder of "
                     "`inplace-grader grade`")
    labs = labs_in(grades_dir)
    if len(labs) != 1:
        _usage_error(mixed_labs(grades_dir, labs) if labs else
                     f"{grades_dir}: no readable reports in {REPORTS}/")
    path = write_class_report(grades_dir, lab=labs.pop(), lang=lang or feedback.default_language(),
                              students=gradebook_students(grades_dir))
    click.echo(f"wrote {path}")


@main.command()
@click.argument("grades_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--to", "target", required=True, type=click.Choice(["canvas", "moodle"]),
              help="The LMS whose gradebook import reads the file.")
@click.option("--assignment", help="Assignment name in the LMS (default: the lab name).")
@click.option("--assignment-id", help="Canvas only: the assignment's number (from its "
              "address); without it Canvas matches the name or creates an assignment.")
@click.option("--roster", "roster_path", type=click.Path(path_type=Path, dir_okay=False),
              help="CSV mapping each student to their LMS ids (see docs/gradebooks.md).")
@click.option("--percent", is_flag=True, help="Export 100 x score / max (out of 100).")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="The CSV file to write (default: GRADES_DIR/canvas.csv or moodle.csv).")
@click.option("--force", is_flag=True, help="Overwrite the output file if it exists.")
@click.option("--zero-missing", is_flag=True,
              help="Export 0 for a not gradable submission (empty, unreadable) and for a "
              "roster student with no submission, instead of leaving their LMS grade as is.")
@lang_option(what="Moodle's feedback line")
def export(grades_dir: Path, target: str, assignment: str | None, assignment_id: str | None,
           roster_path: Path | None, percent: bool, output: Path | None, force: bool,
           zero_missing: bool, lang: str | None) -> None:
    """Write a gradebook CSV for Canvas or Moodle from GRADES_DIR, the --out folder of
    `grade`. Students who could not be graded are left out (their LMS grade stays) unless
    --zero-missing."""
    from grader import feedback
    from grader.exporters.lms_csv import canvas_csv, moodle_csv
    from grader.grades import REPORTS, iter_reports, mixed_labs, write_atomically
    from grader.roster import read_roster
    from grader.views import STUDENT

    if not (grades_dir / REPORTS).is_dir():
        _usage_error(f"{grades_dir}: no {REPORTS}/ folder; pass the --out folder of "
                     "`inplace-grader grade`")
    if assignment_id is not None and target != "canvas":
        _usage_error("--assignment-id is for Canvas; in Moodle, map the grade column to the "
                     "grade item on the import page")
    output = output or grades_dir / f"{target}.csv"
    if output.exists() and not force:
        _usage_error(f"{output} exists; pass --force to overwrite it, or -o FILE")
    roster = read_roster(roster_path) if roster_path is not None else None
    labs: set[str] = set()
    standings = []
    for report in iter_reports(grades_dir):  # one report at a time: memory stays flat
        labs.add(report.lab)
        standings.append(STUDENT.gradebook_standing(report))
    if not standings:
        _usage_error(f"{grades_dir / REPORTS}: no reports; run `inplace-grader grade "
                     f"SUBMISSIONS --lab LAB --out {grades_dir}` first")
    if len(labs) > 1:
        _usage_error(mixed_labs(grades_dir, labs))
    name = assignment or next(iter(labs))
    if target == "canvas":
        result = canvas_csv(standings, assignment=name, assignment_id=assignment_id,
                            roster=roster, percent=percent, zero_missing=zero_missing)
    else:
        result = moodle_csv(standings, assignment=name, roster=roster, percent=percent,
                            lang=lang or feedback.default_language(),
                            zero_missing=zero_missing)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    write_atomically(output, result.text)
    students = f"{result.rows} student{'s' if result.rows != 1 else ''}"
    warnings = f"{len(result.warnings)} warning{'s' if len(result.warnings) != 1 else ''}"
    click.echo(f"wrote {output}: {students}, {warnings}")


@main.group("nbgrader")
def nbgrader_group() -> None:
    """nbgrader: a lab's source notebook, with solution and autograded test cells."""


@nbgrader_group.command("source")
@click.option("--lab", required=True, help=f"Lab name: {LABS}.")
@click.option("--hidden", "hidden_path", type=click.Path(path_type=Path),
              help="Hidden-cases file: its cases go between ### BEGIN/END HIDDEN TESTS.")
@click.option("--root", "project", type=click.Path(path_type=Path, file_okay=False),
              default=None, help=SOLUTIONS_ROOT_HELP)
@click.option("-o", "--output", "out", type=click.Path(path_type=Path, file_okay=False),
              required=True, help="COURSE/source/ASSIGNMENT: the notebook is written there.")
@click.option("--force", is_flag=True, help="Overwrite an existing notebook.")
def nbgrader_source(lab: str, hidden_path: Path | None, project: Path | None, out: Path,
                    force: bool) -> None:
    """Write the lab's nbgrader source notebook (<lab file>.ipynb) into OUT."""
    from grader.distribution import solutions_dir
    from grader.platforms.nbgrader.source import hidden_store_path, write_source_notebook

    solutions = solutions_dir(project)
    hidden = _load_hidden(hidden_path)
    target = write_source_notebook(lab, solutions_root=solutions, out=out,
                                   hidden=hidden, force=force)
    if hidden is not None:
        click.echo(f"wrote {hidden_store_path(out, target.stem)}: the hidden cases, which "
                   "autograde reads there (keep it from students)")
    click.echo(f"wrote {target}; next: `nbgrader generate_assignment {out.name}` in the course "
               "folder")


@nbgrader_group.command("verify")
@click.argument("course", type=click.Path(path_type=Path, file_okay=False))
@click.argument("assignment")
@click.option("--student", "students", multiple=True,
              help="Regrade only this student (repeat for more).")
def nbgrader_verify(course: Path, assignment: str, students: tuple[str, ...]) -> None:
    """Regrade ASSIGNMENT's submitted notebooks in the sandbox and compare each test cell with
    the points nbgrader's gradebook recorded: a line per student whose points differ; exit 1
    if any do."""
    from grader.platforms.nbgrader.verify import verify_assignment

    result = verify_assignment(course, assignment, students=students, on_student=lambda s:
                               click.echo(s.line()) if s.differs else None)
    click.echo(result.summary())
    sys.exit(result.return_code)


@main.command("checks")
@click.option("--lab", required=True, help=f"Lab name: {LABS}.")
@click.option("--cases", "show_cases", is_flag=True,
              help="List the lab's cases instead: what a --hidden file's `like` may name.")
def list_checks(lab: str, show_cases: bool) -> None:
    """List a lab's check ids, kinds and points (the keys a --rubric file may set)."""
    import json

    from grader.labs import get_lab

    lab_obj = get_lab(lab)
    if show_cases:
        for function in lab_obj.functions:
            for case in lab_obj.cases(function):
                details = json.dumps({k: v for k, v in case.items() if k != "id"})
                click.echo(f"{function:14} {case['id']:28} {details}")
        return
    rubric = lab_obj.rubric()
    click.echo(f"{'check':40} {'kind':12} {'points':>6}  graded")
    for spec in lab_obj.checks:
        device = "per device" if spec.per_device else "once"
        click.echo(f"{spec.id:40} {spec.kind:12} {rubric.points[spec.id]:>6g}  {device}")


@main.command(hidden=True)  # the course team's, not the students': kept out of --help
@click.option("--check", "check_only", is_flag=True,
              help="Only report stubs that differ from the solutions (exit 1).")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False),
              default=lambda: running_checkout() or Path("."),
              show_default="the checkout this grader runs from, else .",
              help="The project holding solutions/ and assignments/: a checkout or a course's "
                   "copy, as the stubs are written into it (not the installed package).")
def stubs(check_only: bool, root: Path) -> None:
    """Generate assignments/ from solutions/ (solution regions become NotImplementedError)."""
    from grader.stubs import sync_stubs

    if not (root / "solutions").is_dir():
        _usage_error(f"{root}: no solutions/ folder here; pass --root PROJECT")
    changed = sync_stubs(root / "solutions", root / "assignments", write=not check_only)
    for path in changed:
        click.echo(f"{'differs' if check_only else 'wrote'}: {path}")
    sys.exit(ExitCode.FAILED if check_only and changed else ExitCode.OK)


@main.command()
def schema() -> None:
    """Print the JSON Schema of the report that `check --format json` prints."""
    import json

    from grader.models import Report

    click.echo(json.dumps(Report.model_json_schema(), indent=2))


@main.command("wheel")
@click.option("-o", "--output", "out", type=click.Path(path_type=Path, file_okay=False),
              required=True, help="The folder to write the wheel into.")
@click.option("--root", "project", type=click.Path(path_type=Path, file_okay=False),
              default=None, help=WHEEL_ROOT_HELP)
def wheel(out: Path, project: Path | None) -> None:
    """Write the grader's wheel into OUT, for an autograder to install (a GitHub Classroom
    workflow): the installed grader, without the reference solutions."""
    from grader.distribution import grader_wheel

    click.echo(f"wrote {grader_wheel(out, project)}")


@main.group()
def gradescope() -> None:
    """Gradescope: build the autograder zip; `run` is what the zip's run_autograder calls."""


@gradescope.command("build")
@click.option("--lab", required=True, help=f"Lab name: {LABS}.")
@click.option("--hidden", "hidden_path", type=click.Path(path_type=Path),
              help="Hidden-cases file to grade with (kept out of the students' view).")
@click.option("--hidden-visibility", type=click.Choice(["hidden", "after_due_date",
                                                        "after_published"]),
              default="after_published", show_default=True,
              help="When students see hidden checks on Gradescope.")
@timeout_option
@lang_option(default="en")
@click.option("--torch", "torch_version", default=None,
              help="torch version setup.sh installs (default: the one installed here).")
@click.option("--root", "project", type=click.Path(path_type=Path, file_okay=False),
              default=None, help=WHEEL_ROOT_HELP)
@click.option("-o", "--output", "out", type=click.Path(path_type=Path, dir_okay=False),
              default=Path("autograder.zip"), show_default=True)
@click.option("--force", is_flag=True, help="Overwrite an existing zip.")
def gradescope_build(lab: str, hidden_path: Path | None, hidden_visibility: str,
                     timeout: float, lang: str, torch_version: str | None,
                     project: Path | None, out: Path, force: bool) -> None:
    """Build autograder.zip (setup.sh, run_autograder, the grader's wheel) for a Gradescope
    programming assignment."""
    from importlib.metadata import version

    from grader.distribution import wheel_source
    from grader.engine import CheckOptions, check_instructor_input, hidden_plan
    from grader.labs import check_lab_name, get_lab
    from grader.platforms.gradescope.autograder import GradescopeConfig, build_autograder

    if out.exists() and not force:
        _usage_error(f"{out} exists; pass --force to overwrite it")
    source = wheel_source(project)  # before anything slow: a wrong folder is one line at once
    hidden = _load_hidden(hidden_path)
    check_instructor_input(check_lab_name(lab), CheckOptions(hidden=hidden))
    hidden_plan(get_lab(lab), hidden)  # its cases, with the lab loaded: still before the build
    config = GradescopeConfig(lab=lab, hidden_visibility=hidden_visibility,  # type: ignore[arg-type]
                              lang=lang, timeout_s=timeout)
    names = build_autograder(config=config, out=out, project=project, hidden_path=hidden_path,
                             torch_version=torch_version or version("torch").split("+")[0])
    click.echo(f"wrote {out} ({len(names)} files: setup.sh, run_autograder, "
               f"{'hidden cases, ' if hidden_path else ''}the grader's wheel from {source}); "
               "upload it as the autograder of a Gradescope programming assignment")


@gradescope.command("run")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False),
              default=Path("/autograder"), show_default=True)
@click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False),
              default=Path("/autograder/source/inplace-grader.toml"), show_default=True)
def gradescope_run(root: Path, config_path: Path) -> None:
    """Grade ROOT/submission into ROOT/results/results.json (always written)."""
    from grader.platforms.gradescope.autograder import run

    click.echo(f"wrote {run(root, config_path)}")


@main.group()
def classroom50() -> None:
    """Classroom 50: prepare an assignment's autograder; `run` is what it calls."""


@classroom50.command("init")
@click.option("--lab", required=True, help=f"Lab name: {LABS}.")
@click.option("-o", "--output", "out", type=click.Path(path_type=Path, file_okay=False),
              required=True, help="CLASSROOM/autograders/ASSIGNMENT in the course repository.")
@click.option("--torch", "torch_version", default=None,
              help="torch version to install (default: the one installed here).")
@click.option("--root", "project", type=click.Path(path_type=Path, file_okay=False),
              default=None, help=WHEEL_ROOT_HELP)
@click.option("--force", is_flag=True, help="Overwrite an existing autograder.py.")
def classroom50_init(lab: str, out: Path, torch_version: str | None, project: Path | None,
                     force: bool) -> None:
    """Write autograder.py and the grader's wheel for a Classroom 50 assignment."""
    from importlib.metadata import version

    from grader.labs import check_lab_name
    from grader.platforms.classroom50.autograder import init

    if (out / "autograder.py").exists() and not force:
        _usage_error(f"{out / 'autograder.py'} exists; pass --force to overwrite it")
    check_lab_name(lab)
    torch_version = torch_version or version("torch").split("+")[0]
    written = init(lab=lab, out=out, project=project, torch_version=torch_version)
    for path in written:
        click.echo(f"wrote {path}")


@classroom50.command("run")
@click.option("--lab", required=True, help=f"Lab name: {LABS}.")
@click.option("--checkout", type=click.Path(path_type=Path, file_okay=False),
              default=Path("."), show_default=True, help="The student's repository.")
@timeout_option
@lang_option(default="en")
def classroom50_run(lab: str, checkout: Path, timeout: float, lang: str) -> None:
    """Grade the checkout into result.json and release-body.md (always written)."""
    import os

    from grader.labs import check_lab_name
    from grader.models import Limits
    from grader.platforms.classroom50.autograder import run

    check_lab_name(lab)
    report = run(checkout, lab=lab, env=os.environ, lang=lang, limits=Limits(timeout_s=timeout))
    click.echo(f"{report.lab}: {report.score:g} / {report.max_score:g}; wrote "
               f"{checkout / 'result.json'}")


@main.group()
def prairielearn() -> None:
    """PrairieLearn: write an external grader for the course's serverFilesCourse/."""


@prairielearn.command("init")
@click.option("--lab", required=True, help=f"Lab name: {LABS}.")
@click.option("--hidden", "hidden_path", type=click.Path(path_type=Path),
              help="Hidden-cases file to grade with (copied into the folder).")
@timeout_option
@lang_option(default="en")
@click.option("--image", default=None,
              help="The grading image, for the info.json block printed (docs/prairielearn.md).")
@click.option("-o", "--output", "out", type=click.Path(path_type=Path, file_okay=False),
              required=True, help="A folder of the course's serverFilesCourse/, such as "
              "serverFilesCourse/inplace-grader-optim.")
@click.option("--force", is_flag=True, help="Overwrite the grader already in that folder.")
def prairielearn_init(lab: str, hidden_path: Path | None, timeout: float, lang: str,
                      image: str | None, out: Path, force: bool) -> None:
    """Write PrairieLearn's external grader (run, its configuration, the hidden cases) into
    OUT, and print what the info.json of a question that uses it needs."""
    import json

    from grader.platforms.prairielearn.autograder import IMAGE, PrairieLearnConfig, init

    config = PrairieLearnConfig(lab=lab, lang=lang, timeout_s=timeout)  # type: ignore[arg-type]
    written = init(config=config, out=out, hidden_path=hidden_path, image=image or IMAGE,
                   force=force)
    for path in written.files:
        click.echo(f"wrote {path}")
    click.echo("next: keep the folder in the course's serverFilesCourse/ and add this to the "
               "question's info.json (docs/prairielearn.md):")
    click.echo(json.dumps(written.info, indent=2))
    if written.capped:
        click.echo(f"note: PrairieLearn allows at most "
                   f"{written.info['externalGradingOptions']['timeout']} s per job, "
                   "less than a submission that hangs in every function would take; pass a "
                   "smaller --timeout", err=True)
