"""Classroom 50: grade a student's checkout, and prepare a course's autograder bundle.

Classroom 50's runner calls `python autograder.py` in the student's checkout with the
submission's identity in the environment, and reads `./result.json`; `./release-body.md`, when
present, is the text of the submission's Release, which the student reads. `run` always writes
both, also when the checkout holds nothing gradable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from grader.distribution import grader_wheel, wheel_source
from grader.errors import UsageError
from grader.exporters.text import feedback_text
from grader.models import Limits, Report
from grader.platforms.classroom50.identity import bundled_source
from grader.platforms.classroom50.result import result_json

RESULT = "result.json"
RELEASE_BODY = "release-body.md"
RELEASE_LIMIT = 2000  # the runner truncates the Release body here


def run(checkout: Path, *, lab: str, env: Mapping[str, str], lang: str = "en",
        limits: Limits | None = None) -> Report:
    """Grade the checkout into result.json and release-body.md; never raises for the
    submission's sake."""
    from grader.engine import CheckOptions, error_report, grade_upload
    from grader.grades import write_atomically

    options = CheckOptions(device="auto", lang=lang, limits=limits or Limits())
    try:
        report = grade_upload(checkout, lab=lab, options=options)
    except UsageError as exc:  # this machine's (no uid slot free): still a result, with why
        report = error_report(lab=lab, submission=str(checkout), error=str(exc), options=options)
    write_atomically(checkout / RESULT,
                     json.dumps(result_json(report, env=env, lang=lang), indent=2) + "\n")
    body = feedback_text(report, lang=lang)
    if len(body) > RELEASE_LIMIT:
        body = body[:RELEASE_LIMIT - 40].rsplit("\n", 1)[0] + "\n...\n"
    write_atomically(checkout / RELEASE_BODY, f"```\n{body}```\n")
    return report


def init(*, lab: str, out: Path, project: Path | None, torch_version: str) -> list[Path]:
    """autograder.py and the grader's wheel, for CLASSROOM/autograders/ASSIGNMENT/: the
    wheel of `project` (a course's own copy), else of the installed grader."""
    wheel_source(project)  # a wrong --root before anything is written
    out.mkdir(parents=True, exist_ok=True)
    here = resources.files("grader.platforms.classroom50")
    script = here.joinpath("templates").joinpath("autograder.py").read_text()
    autograder = out / "autograder.py"
    autograder.write_text(script.replace("@LAB@", lab).replace("@TORCH_VERSION@", torch_version)
                          .replace("# @IDENTITY@", bundled_source()))
    for old in out.glob("inplace_grader-*.whl"):
        old.unlink()
    return [autograder, grader_wheel(out, project)]
