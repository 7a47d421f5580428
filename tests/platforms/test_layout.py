"""One folder per platform, none importing another's; the neutral exporters import none."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PLATFORMS = ROOT / "grader" / "platforms"


def imported(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def platform_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if parts[:2] == ["grader", "platforms"] and len(parts) > 2 else None


def test_every_platform_is_a_folder_with_its_format_and_entry() -> None:
    folders = {p.name for p in PLATFORMS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == {"gradescope", "classroom50", "github_classroom", "nbgrader",
                       "prairielearn"}
    assert [p.name for p in PLATFORMS.glob("*.py")] == ["__init__.py"]


def test_no_platform_imports_another_platforms_module() -> None:
    for folder in (p for p in PLATFORMS.iterdir() if p.is_dir() and p.name != "__pycache__"):
        for path in folder.rglob("*.py"):
            others = {platform_of(m) for m in imported(path)} - {None, folder.name}
            assert not others, f"{path.relative_to(ROOT)} imports platform {others}"


def test_the_neutral_exporters_and_the_core_import_no_platform() -> None:
    """Left out: the CLI and the formats registry (they name every platform), grader/notebook.py
    (the name nbgrader's test cells import), and submission.py, which asks nbgrader's cells.py
    which cells of a notebook are the grader's: the one question the core puts to a platform."""
    core = [*(ROOT / "grader" / "exporters").glob("*.py"),
            *(p for p in (ROOT / "grader").glob("*.py")
              if p.name not in {"cli.py", "formats.py", "notebook.py", "submission.py"})]
    for path in core:
        reached = {platform_of(m) for m in imported(path)} - {None}
        assert not reached, f"{path.relative_to(ROOT)} imports platform {reached}"
