"""What the builders build from: the labs' reference solutions and the grader's own wheel.

Three places can hold them, asked in this order:
- a course's own copy of the project, passed as `--root` (its solutions, its code);
- the installed package: its solutions ship as package data in `grader/solutions/` (setup.py
  maps the checkout's `solutions/` there), and its files, listed in the distribution's RECORD,
  make the wheel;
- the checkout this package runs from (an editable install, or PYTHONPATH): `solutions/` and
  `pip wheel` of the project folder, as a course's copy.

So `nbgrader source`, `gradescope build` and `classroom50 init` work from any folder. Nothing
here imports torch: a wrong `--root` is one line before anything slow.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from grader.errors import UsageError

DISTRIBUTION = "inplace-grader"
PACKAGE_DIR = Path(__file__).resolve().parent  # grader/, wherever it runs from
PACKAGED_SOLUTIONS = "grader/solutions/"  # the package data setup.py makes of solutions/

# NOTE: [no solutions in a shipped wheel]
# The wheel a builder ships leaves out grader/solutions/. An autograder never reads them, and
# its wheel is within students' reach: Classroom 50 publishes it with the course's Pages, and on
# Gradescope it is installed where the submission's own code may read (the sandbox lets it read
# the Python installation) and could raise it as its import error, which its feedback shows.
# `nbgrader source` is the one reader of the solutions, on the instructor's own install.

# Files of an installed distribution that record the install, not the wheel (RECORD is
# written anew, with the hashes of what the new wheel holds).
INSTALL_RECORDS = frozenset({"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"})


class DistributionError(UsageError):
    """Nothing to build from: one line, naming what was looked for and what to pass."""


def running_checkout() -> Path | None:
    """The project folder this package runs from (pyproject.toml and grader/ side by side: a
    checkout, or the editable install `scripts/setup.sh` makes), else None (an installed
    package)."""
    project = PACKAGE_DIR.parent
    return project if (project / "pyproject.toml").is_file() else None


def check_project(root: Path) -> None:
    """DistributionError unless `root` is a copy of the project (what a wheel is built of)."""
    if not (root / "pyproject.toml").is_file() or not (root / "grader").is_dir():
        raise DistributionError(f"{root}: not a copy of inplace-grader (no pyproject.toml and "
                                "grader/); pass --root the project folder, or leave --root out "
                                "to build from the installed grader")


def solutions_dir(root: Path | None) -> Path:
    """The folder holding `<lab>/<file>` reference solutions: `root/solutions` (a course's own
    copy), else the installed package's `grader/solutions`, else the running checkout's
    `solutions/`."""
    if root is not None:
        if not (root / "solutions").is_dir():
            raise DistributionError(f"{root}: no solutions/ folder here; pass --root a copy of "
                                    "the project that holds solutions/, or leave --root out to "
                                    "use the installed package's")
        return root / "solutions"
    packaged = PACKAGE_DIR / "solutions"
    if packaged.is_dir():
        return packaged
    checkout = running_checkout()
    if checkout is not None and (checkout / "solutions").is_dir():
        return checkout / "solutions"
    raise DistributionError(f"{PACKAGE_DIR}: this grader has no reference solutions (no "
                            "grader/solutions/, no checkout's solutions/); reinstall it with "
                            "`pip install inplace-grader`, or pass --root PROJECT")


def wheel_source(root: Path | None) -> str:
    """What `grader_wheel(out_dir, root)` builds from, in words; DistributionError at once
    when there is nothing to build from."""
    source = _source(root)
    if isinstance(source, Path):
        return f"the project in {source}"
    return f"the installed {DISTRIBUTION} {source.version}"


def grader_wheel(out_dir: Path, root: Path | None) -> Path:
    """Write the grader's wheel into `out_dir` and return its path: `pip wheel` of `root` (a
    course's own copy) or of the running checkout, else the installed distribution's own
    files. Either way without the solutions (see NOTE: [no solutions in a shipped wheel])."""
    source = _source(root)
    out_dir.mkdir(parents=True, exist_ok=True)
    if isinstance(source, Path):
        with tempfile.TemporaryDirectory(prefix="inplace-grader-wheel-") as scratch:
            copy = _snapshot(source, Path(scratch) / "project")
            built = _pip_wheel(copy, Path(scratch), named=source)
            with zipfile.ZipFile(built) as archive:
                members = [(name, archive.read(name)) for name in archive.namelist()]
            return _write_wheel(out_dir / built.name, members)
    return _write_wheel(out_dir / _wheel_name(source), _installed_files(source))


def _source(root: Path | None) -> Path | metadata.Distribution:
    """A project folder to `pip wheel`, or the installed distribution the running grader is."""
    if root is not None:
        check_project(root)
        return root
    checkout = running_checkout()
    if checkout is not None:
        return checkout
    try:
        installed = metadata.distribution(DISTRIBUTION)
        ours = Path(str(installed.locate_file("grader/__init__.py"))).resolve()
    except metadata.PackageNotFoundError:
        ours = None
    if ours != PACKAGE_DIR / "__init__.py":  # another install's files, not the running ones
        raise DistributionError(f"{PACKAGE_DIR}: this grader is neither a checkout nor the "
                                f"installed {DISTRIBUTION}, so its wheel cannot be rebuilt; "
                                "pass --root PROJECT (a copy of the project)")
    return installed


# What a build of the project reads: its metadata files and the two package folders.
BUILD_INPUTS = ("pyproject.toml", "setup.py", "setup.cfg", "MANIFEST.in", "README.md",
                "grader", "solutions")
# The files setuptools ships as license files by default.
LICENSE_FILES = ("LICEN[CS]E*", "COPYING*", "NOTICE*", "AUTHORS*")


def _snapshot(project: Path, target: Path) -> Path:
    """A copy of what a build of `project` reads. pip builds a folder in place (its build/
    and egg-info), so two builds of one checkout at once (two instructors, two test workers)
    would write over each other, and a read-only course copy could not be built at all."""
    target.mkdir(parents=True)
    names = [*BUILD_INPUTS, *(path.name for pattern in LICENSE_FILES
                              for path in project.glob(pattern))]
    try:
        for name in dict.fromkeys(names):
            found = project / name
            if found.is_dir():
                shutil.copytree(found, target / name, symlinks=False,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            elif found.is_file():
                shutil.copy2(found, target / name)
    except (OSError, shutil.Error) as exc:
        raise DistributionError(f"{project}: cannot copy the project to build it "
                                f"({exc})") from None
    return target


def _pip_wheel(project: Path, out_dir: Path, *, named: Path) -> Path:
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-q", "-w", str(out_dir), str(project)],
                           capture_output=True, text=True)
    wheels = sorted(out_dir.glob("inplace_grader-*.whl"))
    if built.returncode != 0 or not wheels:
        last = (built.stderr.strip().splitlines() or ["pip made no wheel"])[-1]
        raise DistributionError(f"{named}: could not build the grader's wheel ({last}); "
                                "`pip wheel --no-deps --no-build-isolation PROJECT` needs "
                                "setuptools installed")
    return wheels[-1]


def _dist_info(distribution: metadata.Distribution) -> str:
    """The distribution's `<name>-<version>.dist-info` folder, as RECORD names it."""
    for path in distribution.files or ():
        if path.parts[0].endswith(".dist-info"):
            return path.parts[0]
    raise DistributionError(f"the installed {DISTRIBUTION} lists no .dist-info files (it was "
                            "not installed from a wheel); pass --root PROJECT")


def _wheel_name(distribution: metadata.Distribution) -> str:
    """`<name>-<version>-<tag>.whl`, the tag as the installed WHEEL file states it."""
    wheel = distribution.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines()
            if line.startswith("Tag:")]
    if not tags:
        raise DistributionError(f"the installed {DISTRIBUTION} has no WHEEL tag; reinstall it "
                                "from a wheel, or pass --root PROJECT")
    return f"{_dist_info(distribution).removesuffix('.dist-info')}-{tags[0]}.whl"


def _installed_files(distribution: metadata.Distribution) -> list[tuple[str, bytes]]:
    """(name in the wheel, bytes) of the package and its metadata, as installed: the files
    RECORD lists under grader/ and the .dist-info folder (scripts are made anew from
    entry_points.txt at install)."""
    dist_info = _dist_info(distribution)
    members = []
    for path in distribution.files or ():
        if path.parts[0] not in ("grader", dist_info):
            continue
        located = Path(str(distribution.locate_file(path)))
        try:
            members.append((path.as_posix(), located.read_bytes()))
        except OSError as exc:
            raise DistributionError(f"{located}: cannot read ({exc.strerror}); reinstall "
                                    f"{DISTRIBUTION}, or pass --root PROJECT") from exc
    return members


def _ships(name: str) -> bool:
    """Whether a file of the package goes into a shipped wheel."""
    parts = name.split("/")
    return not (name.startswith(PACKAGED_SOLUTIONS) or "__pycache__" in parts
                or name.endswith(".pyc")
                or (parts[0].endswith(".dist-info") and parts[-1] in INSTALL_RECORDS))


def _write_wheel(target: Path, members: Iterable[tuple[str, bytes]]) -> Path:
    """A wheel of the members that ship, the .dist-info last, with a RECORD of their hashes."""
    kept = sorted(((name, data) for name, data in members if _ships(name)),
                  key=lambda member: (".dist-info/" in member[0], member[0]))
    dist_infos = {name.split("/")[0] for name, _ in kept if ".dist-info/" in name}
    if len(dist_infos) != 1:
        raise DistributionError(f"{target.name}: expected one .dist-info folder, found "
                                f"{len(dist_infos)}; pass --root PROJECT")
    record_name = f"{dist_infos.pop()}/RECORD"
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for name, data in kept:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow([name, f"sha256={digest}", len(data)])
    writer.writerow([record_name, "", ""])
    partial = target.with_name(f".{target.name}.partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in [*kept, (record_name, record.getvalue().encode())]:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = 0o100644 << 16  # a regular file, readable by all
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    partial.replace(target)
    return target
