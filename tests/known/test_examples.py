"""The bundled example class says true things about itself."""

from __future__ import annotations

from pathlib import Path

import tomllib

from tests.conftest import ROOT


def _docstring(path: Path) -> str:
    """The text between the file's first two triple quotes (jae.py does not parse)."""
    parts = path.read_text().split('"""', 2)
    return parts[1] if len(parts) == 3 else ""


def test_each_example_file_says_what_it_does_as_its_test_twin_does() -> None:
    twins = 0
    for example in sorted((ROOT / "examples").glob("*/class/*.py")):
        lab = example.parents[1].name
        body = example.read_text().split('"""\n', 2)[-1]
        assert ".toml beside this file" not in example.read_text(), example.name
        if not body.strip():
            continue  # kofi.py: the empty file of the class
        for twin in (ROOT / "tests" / "submissions" / lab).glob("*.py"):
            if twin.read_text().endswith(body) and twin.with_suffix(".toml").exists():
                why = tomllib.loads(twin.with_suffix(".toml").read_text())["why"]
                assert why in " ".join(_docstring(example).split()), example.name
                twins += 1
    assert twins >= 10
