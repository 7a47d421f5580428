"""Wall time of `inplace-grader check` on the solution beside a bare `python -c "import torch"`.

Both are measured in the same run, alternating, so machine load affects them alike; the ratio
is the number to compare across machines. Usage: python bench/check_time.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "bare torch import": [sys.executable, "-c", "import torch"],
    "check (solution)": [sys.executable, "-m", "grader", "check",
                         str(ROOT / "solutions" / "optim" / "optimizer.py"), "--format", "json"],
    "check (stub)": [sys.executable, "-m", "grader", "check",
                     str(ROOT / "assignments" / "optim" / "optimizer.py"), "--format", "json"],
}


def wall(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for command in COMMANDS.values():
        wall(command)  # warm the page cache once
    for _ in range(args.repeat):
        for name, command in COMMANDS.items():
            times[name].append(wall(command))
    base = statistics.median(times["bare torch import"])
    print(f"{'command':22} {'median s':>9} {'min s':>7} {'x import':>9}")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:22} {median:9.2f} {min(samples):7.2f} {median / base:9.2f}")


if __name__ == "__main__":
    main()
