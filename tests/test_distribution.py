"""What the builders build from (grader/distribution.py): a course's copy given as --root, the
installed package, or the checkout the grader runs from.

The slow tests install the project, as a course would, into a throwaway venv (offline: no
dependencies, no build isolation) and run its `inplace-grader` from a folder outside the
checkout, with nothing of the checkout on the path.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader import __version__
from grader.cli import main
from grader.distribution import DistributionError, grader_wheel, solutions_dir
from tests.conftest import ROOT

WHEEL = f"inplace_grader-{__version__}-py3-none-any.whl"
DIST_INFO = f"inplace_grader-{__version__}.dist-info"
PROJECT_FILES = ("pyproject.toml", "setup.py", "README.md", "grader", "solutions")


def course_copy(folder: Path) -> Path:
    """A course's own copy of the project: what `pip install` and --root read of it."""
    folder.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info")
    for name in PROJECT_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, folder / name, ignore=ignore)
        else:
            shutil.copy2(source, folder / name)
    return folder


def wheel_files(wheel: zipfile.ZipFile) -> dict[str, bytes]:
    return {name: wheel.read(name) for name in wheel.namelist()}


def assert_a_valid_wheel(files: dict[str, bytes]) -> None:
    """RECORD names every file once, with its sha256 and size; no solutions, no bytecode."""
    record = list(csv.reader(io.StringIO(files[f"{DIST_INFO}/RECORD"].decode())))
    assert sorted(row[0] for row in record) == sorted(files)
    for name, digest, size in record:
        if name.endswith("/RECORD"):
            assert digest == size == ""
            continue
        data = files[name]
        expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        assert (digest, int(size)) == (f"sha256={expected.decode()}", len(data)), name
    assert {"grader/__init__.py", "grader/labs/optim/rubric.toml", "grader/locales/en.toml",
            f"{DIST_INFO}/METADATA", f"{DIST_INFO}/WHEEL",
            f"{DIST_INFO}/entry_points.txt"} <= set(files)
    # See NOTE: [no solutions in a shipped wheel]
    assert not [n for n in files if "solutions/" in n or "__pycache__" in n
                or n.endswith((".pyc", "INSTALLER", "direct_url.json"))]


def test_a_checkout_builds_from_its_own_solutions() -> None:
    assert solutions_dir(None) == ROOT / "solutions"


def test_a_course_copy_given_as_root_is_used_for_its_solutions(tmp_path: Path) -> None:
    course = course_copy(tmp_path / "course")
    solution = course / "solutions" / "optim" / "optimizer.py"
    solution.write_text(solution.read_text() + "\n# the course's own edit\n")
    assert solutions_dir(course) == course / "solutions"
    out = tmp_path / "source" / "ps1"
    made = CliRunner().invoke(main, ["nbgrader", "source", "--lab", "optim", "--root",
                                     str(course), "-o", str(out)])
    assert made.exit_code == 0, made.output
    assert "the course's own edit" in (out / "optimizer.ipynb").read_text()


def test_a_root_without_solutions_or_code_is_one_line_naming_it(tmp_path: Path) -> None:
    with pytest.raises(DistributionError, match="no solutions/ folder here; pass --root"):
        solutions_dir(tmp_path)
    with pytest.raises(DistributionError, match="not a copy of inplace-grader"):
        grader_wheel(tmp_path / "out", tmp_path)
    assert not (tmp_path / "out").exists()


def test_the_wheel_of_a_course_copy_carries_its_code(tmp_path: Path) -> None:
    course = course_copy(tmp_path / "course")
    init = course / "grader" / "__init__.py"
    init.write_text(init.read_text() + "COURSE = 'ours'\n")
    wheel = grader_wheel(tmp_path / "out", course)
    assert wheel == tmp_path / "out" / WHEEL
    with zipfile.ZipFile(wheel) as archive:
        files = wheel_files(archive)
    assert_a_valid_wheel(files)
    assert b"COURSE = 'ours'" in files["grader/__init__.py"]


def test_builds_of_one_copy_at_once_both_succeed_and_leave_it_as_it_was(tmp_path: Path) -> None:
    """Two instructors (or two test workers) building from one checkout at once: pip builds
    a folder in place, so each build works on a snapshot of its own (one of them failed
    with "Failed to build one or more wheels" before). The copy, read-only, is left as it was."""
    from concurrent.futures import ThreadPoolExecutor

    course = course_copy(tmp_path / "course")
    before = sorted(path.relative_to(course) for path in course.rglob("*"))
    for path in (course, *course.rglob("*")):
        path.chmod(path.stat().st_mode & ~0o222)
    try:
        with ThreadPoolExecutor(max_workers=3) as pool:
            wheels = list(pool.map(lambda n: grader_wheel(tmp_path / f"out{n}", course),
                                   range(3)))
    finally:
        for path in (course, *course.rglob("*")):
            path.chmod(path.stat().st_mode | 0o200)
    assert [wheel.name for wheel in wheels] == [WHEEL] * 3
    contents = []
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            contents.append(wheel_files(archive))
    assert_a_valid_wheel(contents[0])
    assert contents[0] == contents[1] == contents[2]
    assert sorted(path.relative_to(course) for path in course.rglob("*")) == before


# The installed grader, run from outside the checkout.


def venv(folder: Path) -> Path:
    """A venv that sees the running environment's packages (torch, click, ...), so that the
    grader installs with --no-deps: its python."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(folder)], check=True, timeout=120)
    if sys.prefix != sys.base_prefix:  # run from a venv: its packages are not the system's
        ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
                *site.getsitepackages()}
        theirs = subprocess.run([folder / "bin" / "python", "-c",
                                 "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                capture_output=True, text=True, check=True).stdout.strip()
        Path(theirs, "_outer_environment.pth").write_text("\n".join(sorted(ours)) + "\n")
    return folder / "bin" / "python"


def outside_env() -> dict[str, str]:
    """Nothing of the checkout on the path, and pip kept off the network."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def pip_install(python: Path, *args: str) -> None:
    installed = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps",
                                "--no-build-isolation", *args], capture_output=True,
                               text=True, timeout=300, env=outside_env())
    assert installed.returncode == 0, installed.stderr


def run_outside(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = python.parent / "inplace-grader"
    return subprocess.run([command, *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=outside_env())


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip install PROJECT` (not editable) into a throwaway venv: its python."""
    scratch = tmp_path_factory.mktemp("installed")
    python = venv(scratch / "venv")
    pip_install(python, str(course_copy(scratch / "project")))
    shutil.rmtree(scratch / "project")  # nothing left to fall back on but the install
    return python


@pytest.mark.slow
def test_the_install_holds_the_solutions_as_package_data(installed: Path) -> None:
    where = subprocess.run([installed, "-I", "-c", "import grader; print(grader.__file__)"],
                           capture_output=True, text=True, env=outside_env(), check=True)
    package = Path(where.stdout.strip()).parent
    assert package.parent.name == "site-packages" and ROOT not in package.parents
    for lab, name in {"optim": "optimizer.py", "tensor_ops": "tensor_ops.py",
                      "autograd": "autograd_inplace.py"}.items():
        shipped = package / "solutions" / lab / name
        assert shipped.read_text() == (ROOT / "solutions" / lab / name).read_text()


@pytest.mark.slow
def test_nbgrader_source_from_any_folder(installed: Path, tmp_path: Path) -> None:
    made = run_outside(installed, tmp_path, "nbgrader", "source", "--lab", "optim",
                       "-o", "course/source/ps1")
    assert made.returncode == 0, made.stderr
    notebook = json.loads((tmp_path / "course" / "source" / "ps1" / "optimizer.ipynb")
                          .read_text())
    sources = ["".join(cell["source"]) for cell in notebook["cells"]]
    assert any("### BEGIN SOLUTION" in source for source in sources)


@pytest.mark.slow
def test_gradescope_build_from_any_folder(installed: Path, tmp_path: Path) -> None:
    made = run_outside(installed, tmp_path, "gradescope", "build", "--lab", "optim",
                       "-o", "autograder.zip")
    assert made.returncode == 0, made.stderr
    assert f"from the installed inplace-grader {__version__}" in made.stdout
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        assert set(archive.namelist()) == {"setup.sh", "run_autograder",
                                           "inplace-grader.toml", WHEEL}
        assert WHEEL in archive.read("setup.sh").decode()
        with zipfile.ZipFile(io.BytesIO(archive.read(WHEEL))) as wheel:
            assert_a_valid_wheel(wheel_files(wheel))


@pytest.mark.slow
def test_classroom50_init_from_any_folder_ships_a_wheel_that_installs(installed: Path,
                                                                     tmp_path: Path) -> None:
    made = run_outside(installed, tmp_path, "classroom50", "init", "--lab", "optim",
                       "-o", "classroom/autograders/optim")
    assert made.returncode == 0, made.stderr
    bundle = tmp_path / "classroom" / "autograders" / "optim"
    assert sorted(p.name for p in bundle.iterdir()) == ["autograder.py", WHEEL]
    with zipfile.ZipFile(bundle / WHEEL) as wheel:
        assert_a_valid_wheel(wheel_files(wheel))
    # The rebuilt wheel is one pip installs, and the grader it installs runs.
    python = venv(tmp_path / "student-venv")
    pip_install(python, str(bundle / WHEEL))
    checks = run_outside(python, tmp_path, "checks", "--lab", "optim")
    assert checks.returncode == 0, checks.stderr
    assert "zero_grad.keeps_grad_object" in checks.stdout


@pytest.mark.slow
def test_the_wheel_command_from_any_folder(installed: Path, tmp_path: Path) -> None:
    made = run_outside(installed, tmp_path, "wheel", "-o", "template/.github/grader")
    assert made.returncode == 0, made.stderr
    with zipfile.ZipFile(tmp_path / "template" / ".github" / "grader" / WHEEL) as wheel:
        assert_a_valid_wheel(wheel_files(wheel))


@pytest.mark.slow
def test_an_editable_install_builds_from_its_checkout(tmp_path: Path) -> None:
    """What scripts/setup.sh makes (`pip install -e .`): the solutions and the wheel come
    from the checkout it points at."""
    project = course_copy(tmp_path / "project")
    python = venv(tmp_path / "venv")
    pip_install(python, "-e", str(project))
    made = run_outside(python, tmp_path, "nbgrader", "source", "--lab", "optim", "-o", "ps1")
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "ps1" / "optimizer.ipynb").is_file()
    made = run_outside(python, tmp_path, "classroom50", "init", "--lab", "optim", "-o", "c50")
    assert made.returncode == 0, made.stderr
    with zipfile.ZipFile(tmp_path / "c50" / WHEEL) as wheel:
        assert_a_valid_wheel(wheel_files(wheel))
