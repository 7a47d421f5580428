"""Gradescope: build the autograder zip, and grade one submission inside it.

The zip holds `setup.sh` and `run_autograder` at its root (Gradescope's layout), the grader's
wheel for setup.sh to install (grader/distribution.py: the installed grader's, or a course
copy's), `inplace-grader.toml` (the lab and grading options) and, when given, the hidden-cases
file. `run_autograder` calls `inplace-grader gradescope run`, which always writes
`results/results.json`: a broken upload, a crash or a timeout is a score with a message, never
Gradescope's bare "The autograder failed to execute correctly".
"""

from __future__ import annotations

import json
import sys
import tempfile
import zipfile
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grader import feedback
from grader.distribution import grader_wheel
from grader.errors import UsageError
from grader.models import Limits
from grader.platforms.gradescope.results import Visibility, failure_results, results_json

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CONFIG = "inplace-grader.toml"
HIDDEN = "hidden.toml"
SCRIPTS = ("setup.sh", "run_autograder")


class GradescopeConfig(BaseModel):
    """What `run_autograder` grades with; written by `build`, read by `run`."""

    model_config = ConfigDict(extra="forbid")

    lab: str
    hidden: str = Field(default="", description="Hidden-cases file, beside this one.")
    hidden_visibility: Visibility = "after_published"
    lang: str = "en"
    timeout_s: float = Field(default=60.0, gt=0)
    memory_mib: int = Field(default=4096, ge=256)


class GradescopeError(UsageError):
    """An instructor mistake while building: one line."""


def _script(name: str, *, torch_version: str, wheel: str) -> str:
    templates = resources.files("grader.platforms.gradescope").joinpath("templates")
    text = templates.joinpath(name).read_text()
    return text.replace("@TORCH_VERSION@", torch_version).replace("@WHEEL@", wheel)


def build_autograder(*, config: GradescopeConfig, out: Path, project: Path | None,
                     hidden_path: Path | None, torch_version: str) -> list[str]:
    """Write the autograder zip, with the wheel of `project` (a course's own copy) or else of
    the installed grader; returns the names it holds."""
    with tempfile.TemporaryDirectory(prefix="inplace-grader-build-") as scratch:
        wheel = grader_wheel(Path(scratch), project)
        wheel_entry = (wheel.name, wheel.read_bytes(), 0o644)
    entries: list[tuple[str, bytes, int]] = []  # (name, data, unix mode)
    for name in SCRIPTS:
        script = _script(name, torch_version=torch_version, wheel=wheel.name)
        entries.append((name, script.encode(), 0o755))
    if hidden_path is not None:
        entries.append((HIDDEN, hidden_path.read_bytes(), 0o600))
        config = config.model_copy(update={"hidden": HIDDEN})
    lines = [f"{key} = {json.dumps(value)}" for key, value in config.model_dump().items()]
    entries.append((CONFIG, ("\n".join(lines) + "\n").encode(), 0o644))
    entries.append(wheel_entry)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16  # a regular file with its mode
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    partial.replace(out)
    return [name for name, _, _ in entries]


def load_config(path: Path) -> GradescopeConfig:
    try:
        with path.open("rb") as handle:
            return GradescopeConfig.model_validate(tomllib.load(handle))
    except OSError as exc:
        raise GradescopeError(f"{path}: cannot read ({exc.strerror})") from exc
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise GradescopeError(f"{path}: not a valid autograder configuration ({exc})") from exc


def run(root: Path, config_path: Path) -> Path:
    """Grade `root/submission` into `root/results/results.json`; never raises for the
    submission's or the configuration's sake."""
    from grader.engine import CheckOptions, grade_upload
    from grader.errors import UsageError
    from grader.grades import write_atomically
    from grader.hidden import HiddenFileError, load_hidden_file, released
    from grader.labs import LAB_FILES, UnknownLabError
    from grader.views import View

    results = root / "results" / "results.json"
    lang = "en"
    try:
        config = load_config(config_path)
        lang = config.lang
        hidden = (load_hidden_file(config_path.parent / config.hidden) if config.hidden
                  else None)
        if config.lab not in LAB_FILES:
            raise UnknownLabError(f"unknown lab {config.lab!r}")
        limits = Limits(timeout_s=config.timeout_s, memory_bytes=config.memory_mib * 1024**2)
        options = CheckOptions(device="auto", lang=lang, limits=limits, hidden=hidden)
        report = grade_upload(root / "submission", lab=config.lab, options=options)
        data = results_json(report, lang=lang, hidden_visibility=config.hidden_visibility,
                            view=View(release=released(hidden)))
    except (GradescopeError, HiddenFileError, UsageError, UnknownLabError) as exc:
        data = failure_results(feedback.ui("autograder_misconfigured", lang, error=exc))
    except Exception as exc:  # the grader's own failure: still a result, with the reason
        data = failure_results(feedback.ui("autograder_internal", lang,
                                           error=f"{type(exc).__name__}: {exc}"))
    write_atomically(results, json.dumps(data, indent=2) + "\n")
    return results
