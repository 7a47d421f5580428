"""What the test suite asserts, counted from its source: to show that moving or speeding up
tests lost nothing.

Per test module (any `test_*.py` under tests/, the submission folders included): its test
functions, its `assert` statements, its `pytest.raises`/`warns`/`fail` calls and its calls of
assertion helpers (any callable named `assert*`: `torch.testing.assert_close`, a local
`assert_outcome`). Then the known submissions: every `.py` under tests/submissions/ and
tests/hostile/ with the `.toml` of expectations beside it, and tests/hidden/'s files.

The totals, and a fingerprint per test function (name, assertions), do not depend on where a
file lives: `--json` writes them, `--compare BEFORE.json` says what was lost since. Usage:
    python bench/test_inventory.py [--json FILE] [--compare FILE] [--files]
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PYTEST_ASSERTIONS = {"raises", "warns", "fail", "deprecated_call"}


@dataclass
class Counts:
    tests: int = 0
    asserts: int = 0
    pytest_calls: int = 0  # pytest.raises, warns, fail, deprecated_call
    helper_calls: int = 0  # assert_close, assert_outcome, ...

    def add(self, other: Counts) -> None:
        self.tests += other.tests
        self.asserts += other.asserts
        self.pytest_calls += other.pytest_calls
        self.helper_calls += other.helper_calls

    @property
    def assertions(self) -> int:
        return self.asserts + self.pytest_calls + self.helper_calls


@dataclass
class Module:
    path: str
    counts: Counts = field(default_factory=Counts)
    # "name: assertions" for each test function, its own body only (helpers count where
    # they are defined).
    tests: list[str] = field(default_factory=list)


def _called(node: ast.Call) -> tuple[str, str]:
    """(object, attribute) of `obj.attr(...)`, or ("", name) of `name(...)`."""
    func = node.func
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else ""
        return owner, func.attr
    if isinstance(func, ast.Name):
        return "", func.id
    return "", ""


def count(tree: ast.AST) -> Counts:
    counts = Counts()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            counts.asserts += 1
        elif isinstance(node, ast.Call):
            owner, name = _called(node)
            if owner == "pytest" and name in PYTEST_ASSERTIONS:
                counts.pytest_calls += 1
            elif name.startswith("assert"):
                counts.helper_calls += 1
    return counts


def is_test(node: ast.AST) -> bool:
    return (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test"))


def module(path: Path) -> Module:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = Module(str(path.relative_to(ROOT)), count(tree))
    for node in ast.walk(tree):
        if is_test(node):
            found.tests.append(f"{node.name}: {count(node).assertions}")
    found.counts.tests = len(found.tests)
    return found


def known_submissions() -> dict[str, int]:
    """Known submissions per folder, each a `.py` with its `.toml` of expectations (a `.py`
    without one is counted apart: it would be a file no test reads)."""
    found: Counter[str] = Counter()
    for folder in sorted([*TESTS.joinpath("submissions").iterdir(), TESTS / "hostile"]):
        for path in sorted(p for p in folder.glob("*.py") if not p.name.startswith("test_")):
            kind = "with .toml" if path.with_suffix(".toml").exists() else "WITHOUT .toml"
            found[f"{folder.relative_to(TESTS)} ({kind})"] += 1
    found["hidden (hidden-case submissions)"] = len(list(TESTS.joinpath("hidden").glob("*.py")))
    return dict(found)


def inventory() -> dict:
    modules = [module(path) for path in sorted(TESTS.rglob("test_*.py"))]
    total = Counts()
    for found in modules:
        total.add(found.counts)
    return {
        "modules": [{"path": m.path, **asdict(m.counts), "tests_": m.tests} for m in modules],
        "total": {**asdict(total), "assertions": total.assertions, "files": len(modules)},
        "known_submissions": known_submissions(),
        "fingerprints": sorted(f for m in modules for f in m.tests),
    }


def show(data: dict, *, files: bool) -> None:
    if files:
        print(f"{'file':58} {'tests':>5} {'assert':>6} {'pytest':>6} {'helper':>6}")
        for m in data["modules"]:
            print(f"{m['path']:58} {m['tests']:5} {m['asserts']:6} {m['pytest_calls']:6} "
                  f"{m['helper_calls']:6}")
    t = data["total"]
    print(f"{t['files']} test files, {t['tests']} test functions, {t['assertions']} assertions "
          f"({t['asserts']} assert statements, {t['pytest_calls']} pytest.raises/warns/fail, "
          f"{t['helper_calls']} assert* helper calls)")
    subs = data["known_submissions"]
    print(f"known submissions: {sum(subs.values())}: "
          + ", ".join(f"{k} {v}" for k, v in subs.items()))


def compare(before: dict, after: dict) -> int:
    """Print what changed; 1 where a test function or an assertion was lost."""
    lost = Counter(before["fingerprints"]) - Counter(after["fingerprints"])
    gained = Counter(after["fingerprints"]) - Counter(before["fingerprints"])
    for name in sorted(lost.elements()):
        print(f"- {name}")
    for name in sorted(gained.elements()):
        print(f"+ {name}")
    b, a = before["total"], after["total"]
    for key in ("files", "tests", "assertions", "asserts", "pytest_calls", "helper_calls"):
        print(f"{key:13} {b[key]:6} -> {a[key]:6}")
    worse = (a["tests"] < b["tests"] or a["assertions"] < b["assertions"]
             or before["known_submissions"] != after["known_submissions"])
    if before["known_submissions"] != after["known_submissions"]:
        print(f"known submissions changed: {before['known_submissions']} -> "
              f"{after['known_submissions']}")
    print("nothing lost" if not worse else "LOST: tests, assertions or known submissions")
    return int(worse)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the inventory here")
    parser.add_argument("--compare", type=Path, help="an earlier --json to compare with")
    parser.add_argument("--files", action="store_true", help="one line per test file")
    args = parser.parse_args()
    data = inventory()
    show(data, files=args.files)
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    if args.compare:
        return compare(json.loads(args.compare.read_text()), data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
