"""How fast `check` answers what needs no sandbox, as a ratio to a bare `import torch`.

Each case is timed alternating with a bare torch import (so machine load affects both alike),
median of N runs each. Cases: an empty file, an oversized file, a file that is not UTF-8, a
malformed notebook, a syntax error, a file with none of the lab's names (all told before any
worker starts or torch is imported: grader/quick_answers.py), and for comparison a file whose
names only its import can show (a star import: the sandbox's to tell).
Usage:
    python bench/fast_answers.py [--n 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, capture_output=True, cwd=ROOT, check=False)
    return time.perf_counter() - started


def cases(folder: Path) -> dict[str, Path]:
    made = {
        "empty": b"",
        "oversized": b"x = 1\n" * 200_000,
        "not UTF-8": b"\xff\xfe not text",
        "malformed notebook": b'{"nbformat": 5, "cells": []}',
        "syntax error": b"def zero_grad(params:\n",
        "none of the names": b"import torch\n\ndef relu_(x):\n    return x.clamp_(min=0)\n",
        "star import (sandbox)": b"from math import *\n",
    }
    paths = {}
    for index, (name, data) in enumerate(made.items()):
        suffix = ".ipynb" if "notebook" in name else ".py"
        path = folder / str(index) / f"optimizer{suffix}"
        path.parent.mkdir()
        path.write_bytes(data)
        paths[name] = path
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5)
    args = parser.parse_args()
    torch = [sys.executable, "-c", "import torch"]
    with tempfile.TemporaryDirectory() as scratch:
        for name, path in cases(Path(scratch)).items():
            check = [sys.executable, "-m", "grader", "check", str(path), "--lab", "optim"]
            answers, imports = [], []
            for _ in range(args.n):
                answers.append(seconds(check))
                imports.append(seconds(torch))
            answer, bare = statistics.median(answers), statistics.median(imports)
            print(f"{name:28s} {answer:6.2f} s   torch import {bare:5.2f} s   "
                  f"ratio {answer / bare:4.2f}x")


if __name__ == "__main__":
    main()
