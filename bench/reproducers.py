"""Reproducer coverage: of the failed checks the known mistakes get (tests/submissions/), how
many carry a reproducer, per lab; and which checks and findings have none, and how often.

A failed check is asked for a reproducer where a student sees it and it holds a property of
the code (engine/reproduce.py `wants_reproducer`): not a runtime row (a crash, a timeout),
not one that says only "not graded", "not implemented" or "not shown yet". Those are counted
apart. The time judging took, and finding the reproducers' cases, is printed too.
Usage:
    python bench/reproducers.py [--lab optim] [--lab ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import grader.engine.api as engine_api  # noqa: E402
from grader.engine import CheckOptions, check_submission  # noqa: E402
from grader.engine.reproduce import wants_reproducer  # noqa: E402
from grader.labs import LAB_FILES, get_lab  # noqa: E402
from grader.sandbox import Sandbox  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SUBMISSIONS = ROOT / "tests" / "submissions"
ASKED: dict[tuple[str, str], str] = {}  # (row id, device) -> finding key, of the last report
SPENT = [0.0]  # seconds in engine/reproduce.py, all reports


def _spy(context: Any, observed: Any, rows: Any) -> Any:
    """engine/reproduce.py's step, noting which failed rows it is asked for."""
    ASKED.clear()
    ASKED.update({(row.id, row.device): row.finding.key for row in rows
                  if wants_reproducer(row)})
    started = time.perf_counter()
    try:
        return _reproducers(context, observed, rows)
    finally:
        SPENT[0] += time.perf_counter() - started


_reproducers = engine_api.reproducers
engine_api.reproducers = _spy


def mistakes(lab: str) -> list[Path]:
    found = []
    for path in sorted((SUBMISSIONS / lab).glob("*.py")):
        with path.with_suffix(".toml").open("rb") as handle:
            if tomllib.load(handle)["fails"]:
                found.append(path)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lab", action="append", choices=sorted(LAB_FILES))
    args = parser.parse_args()
    labs = args.lab or sorted(LAB_FILES)
    totals = Counter[str]()
    for lab in labs:
        count = Counter[str]()
        without = Counter[str]()
        ids_asked: set[str] = set()
        ids_covered: set[str] = set()
        started = time.monotonic()
        judge_s, SPENT[0] = 0.0, 0.0
        with Sandbox([lab]) as sandbox:
            for path in mistakes(lab):
                report = check_submission(path, lab=lab, options=CheckOptions(device="cpu"),
                                          sandbox=sandbox)
                judge_s += report.phases.get("judge", 0.0)
                for check in report.checks:
                    if check.status != "failed" or check.hidden:
                        continue
                    count["failed"] += 1
                    key = ASKED.get((check.id, check.device))
                    if key is None:
                        continue
                    count["asked"] += 1
                    ids_asked.add(check.id)
                    if check.reproducer:
                        count["covered"] += 1
                        ids_covered.add(check.id)
                    else:
                        without[f"{check.id.partition('.')[2]} ({check.kind}): {key}"] += 1
        checks = len(get_lab(lab).checks)
        print(f"{lab}: {count['covered']} of {count['asked']} failed checks have a reproducer "
              f"({count['covered'] / max(count['asked'], 1):.0%}); "
              f"{count['failed'] - count['asked']} more failed rows are runtime, not graded or "
              f"not shown; check ids: {len(ids_covered)} with a reproducer of the "
              f"{len(ids_asked)} some mistake fails ({checks} in the lab); "
              f"{len(mistakes(lab))} mistakes in {time.monotonic() - started:.0f} s "
              f"(judging {judge_s:.1f} s, of which finding reproducers {SPENT[0]:.1f} s)")
        for what, number in without.most_common():
            print(f"    none: {number:3d}  {what}")
        totals.update(count)
    if len(labs) > 1:
        print(f"all labs: {totals['covered']} of {totals['asked']} "
              f"({totals['covered'] / max(totals['asked'], 1):.0%})")


if __name__ == "__main__":
    main()
