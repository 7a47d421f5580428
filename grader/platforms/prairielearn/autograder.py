"""PrairieLearn: write the external grader's folder, and grade one submission with it.

`init` writes a folder for the course's `serverFilesCourse/`: `run` (the entrypoint the
question's `externalGradingOptions` names), `inplace-grader.toml` (the lab and the grading
options) and, when given, the hidden-cases file. The grader itself is installed in the grading
image, so the folder holds no code of ours but `run`. `run` calls
`python -m grader.platforms.prairielearn`, which always writes `results/results.json`.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grader import feedback
from grader.errors import UsageError
from grader.models import Limits
from grader.platforms.prairielearn.results import not_gradable, results_json

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CONFIG = "inplace-grader.toml"
HIDDEN = "hidden.toml"
ENTRYPOINT = "run"
GRADE = Path("/grade")  # where PrairieLearn mounts a grading job
JOB_TIMEOUT_MAX_S = 600  # PrairieLearn refuses a longer `timeout`
STARTUP_S = 30  # the container, torch's import and the sandbox's start, with room to spare
IMAGE = "YOUR_DOCKERHUB_USER/inplace-grader"  # docs/prairielearn.md builds it


class PrairieLearnConfig(BaseModel):
    """What `run` grades with; written by `init`, read for every submission."""

    model_config = ConfigDict(extra="forbid")

    lab: str
    hidden: str = Field(default="", description="Hidden-cases file, beside this one.")
    lang: Literal["en", "ko"] = "en"
    timeout_s: float = Field(default=60.0, gt=0)
    memory_mib: int = Field(default=4096, ge=256)


class PrairieLearnError(UsageError):
    """An instructor mistake while writing the folder: one line."""


@dataclass(frozen=True)
class Written:
    """What `init` wrote, and what the info.json of a question that uses it needs."""

    files: list[Path]
    info: dict[str, Any]
    capped: bool  # the job timeout was cut to PrairieLearn's maximum


def _check(config: PrairieLearnConfig, hidden_path: Path | None) -> int:
    """Everything `run` will rely on, checked now (one line each); returns how many functions
    the lab grades, for the job's timeout."""
    from grader.engine import CheckOptions, check_instructor_input, hidden_plan
    from grader.hidden import load_hidden_file
    from grader.labs import check_lab_name, get_lab

    hidden = load_hidden_file(hidden_path) if hidden_path is not None else None
    check_instructor_input(check_lab_name(config.lab), CheckOptions(hidden=hidden))
    lab = get_lab(config.lab)
    hidden_plan(lab, hidden)  # its cases, with the lab loaded
    return len(lab.functions)


def question_info(folder: str, *, functions: int, config: PrairieLearnConfig,
                  image: str = IMAGE) -> tuple[dict[str, Any], bool]:
    """What a question's info.json needs to be graded with `serverFilesCourse/<folder>`
    (`gradingMethod` and `externalGradingOptions`), and whether the job's timeout was capped.
    That timeout allows every function its own limit (twice with hidden cases, which run in a
    child of their own), plus the start."""
    runs = functions * (2 if config.hidden else 1)
    worst = math.ceil(runs * config.timeout_s + STARTUP_S)
    options = {"enabled": True, "image": image,
               "serverFilesCourse": [f"{folder}/"],
               "entrypoint": (GRADE / "serverFilesCourse" / folder / ENTRYPOINT).as_posix(),
               "timeout": min(worst, JOB_TIMEOUT_MAX_S)}
    return {"gradingMethod": "External", "externalGradingOptions": options}, \
        worst > JOB_TIMEOUT_MAX_S


def init(*, config: PrairieLearnConfig, out: Path, hidden_path: Path | None = None,
         image: str = IMAGE, force: bool = False) -> Written:
    """Write the external grader's folder `out` (meant for the course's serverFilesCourse/)."""
    entrypoint = out / ENTRYPOINT
    if entrypoint.exists() and not force:
        raise PrairieLearnError(f"{entrypoint} exists; pass --force to overwrite it")
    if hidden_path is not None:
        config = config.model_copy(update={"hidden": HIDDEN})
    functions = _check(config, hidden_path)
    out.mkdir(parents=True, exist_ok=True)
    script = resources.files(__package__).joinpath("templates").joinpath(ENTRYPOINT)
    entrypoint.write_text(script.read_text())
    entrypoint.chmod(0o755)
    lines = [f"{key} = {json.dumps(value)}" for key, value in config.model_dump().items()]
    (out / CONFIG).write_text("\n".join(lines) + "\n")
    files = [entrypoint, out / CONFIG]
    hidden = out / HIDDEN
    if hidden_path is not None:
        hidden.write_bytes(hidden_path.read_bytes())
        hidden.chmod(0o600)
        files.append(hidden)
    else:
        hidden.unlink(missing_ok=True)  # an earlier init's: the config no longer names it
    info, capped = question_info(out.resolve().name, functions=functions, config=config,
                                 image=image)
    return Written(files, info, capped)


def load_config(path: Path) -> PrairieLearnConfig:
    try:
        with path.open("rb") as handle:
            return PrairieLearnConfig.model_validate(tomllib.load(handle))
    except OSError as exc:
        raise PrairieLearnError(f"{path}: cannot read ({exc.strerror})") from exc
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise PrairieLearnError(f"{path}: not a valid grader configuration ({exc})") from exc


def run(root: Path, config_path: Path) -> Path:
    """Grade `root/student` into `root/results/results.json`; never raises for the
    submission's or the configuration's sake."""
    from grader.engine import CheckOptions, grade_upload
    from grader.grades import write_atomically
    from grader.hidden import load_hidden_file, released
    from grader.labs import check_lab_name
    from grader.views import View

    results = root / "results" / "results.json"
    lang = "en"
    try:
        config = load_config(config_path)
        lang = config.lang
        hidden = (load_hidden_file(config_path.parent / config.hidden) if config.hidden
                  else None)
        limits = Limits(timeout_s=config.timeout_s, memory_bytes=config.memory_mib * 1024**2)
        options = CheckOptions(device="auto", lang=lang, limits=limits, hidden=hidden)
        report = grade_upload(root / "student", lab=check_lab_name(config.lab),
                              options=options)
        data = results_json(report, lang=lang, view=View(release=released(hidden)))
    except UsageError as exc:  # the course's configuration, or this machine's
        data = not_gradable(feedback.ui("autograder_misconfigured", lang, error=exc))
    except Exception as exc:  # the grader's own failure: still a result, with the reason
        data = not_gradable(feedback.ui("autograder_internal", lang,
                                        error=f"{type(exc).__name__}: {exc}"))
    write_atomically(results, json.dumps(data, indent=2) + "\n")
    return results
