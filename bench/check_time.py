"""Wall time of `inplace-grader check` on the solution beside a bare `python -c "import torch"`,
and where the time of one check goes.

Both are measured in the same run, alternating, so machine load affects them alike; the ratio
is the number to compare across machines. Then one check of each file runs in a fresh process
through the library API (`--one`), which prints its phases (Report.phases: the grader's own
imports, the wait for the worker's warm-up, the child's phases, decoding, judging, the text
report) and the peak RSS of the grading process and of the worker (zygote).
Usage: python bench/check_time.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = {
    "solution": ROOT / "solutions" / "optim" / "optimizer.py",
    "stub": ROOT / "assignments" / "optim" / "optimizer.py",
}
COMMANDS = {
    "bare torch import": [sys.executable, "-c", "import torch"],
    **{f"check ({name})": [sys.executable, "-m", "grader", "check", str(path), "--format", "json"]
       for name, path in FILES.items()},
}
# Report.phases of one check, in the order the check meets them (see bench/grade_class.py).
PHASES = {
    "imports": "grader: its own modules",
    "lab": "grader: torch and the lab, while the worker boots",
    "ready": "grader: waiting for the worker's warm-up beyond that",
    "fork": "zygote: fork of each child",
    "setup": "child: view, uid drop, seccomp, source scan",
    "import": "child: import of the submission, its API",
    "between": "child: between tasks",
    "tasks": "child: probes and their records",
    "exit": "child: exit after its last line",
    "reap": "zygote: kill, reap, sweep",
    "decode": "grader: loading the records",
    "judge": "grader: judging and the report",
    "render": "grader: the text report",
}


def wall(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def one_check(path: Path) -> None:
    """In a fresh process: one check through the library, its phases and peak memory as JSON."""
    started = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    from grader.sandbox import Sandbox

    with Sandbox(["optim"]) as sandbox:  # as `check` does: the worker boots meanwhile
        from grader.engine import CheckOptions, check_submission
        from grader.exporters.text import feedback_text
        from grader.labs import get_lab

        imported = time.perf_counter()
        get_lab("optim")
        loaded = time.perf_counter()
        report = check_submission(path, lab="optim", options=CheckOptions(device="cpu"),
                                  sandbox=sandbox)
        zygote_peak = sandbox.peak_rss_mib()
    rendering = time.perf_counter()
    feedback_text(report, lang="en")
    phases = {**report.phases, "imports": imported - started, "lab": loaded - imported,
              "render": time.perf_counter() - rendering}
    print(json.dumps({"phases": phases, "total_s": time.perf_counter() - started,
                      "grader_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                      / 1024, "zygote_peak_mib": zygote_peak}))


def phase_table(name: str, measured: dict) -> list[str]:
    phases = measured["phases"]
    lines = [f"{name}: {measured['total_s']:.2f} s in-process; peak RSS grader "
             f"{measured['grader_peak_mib']:.0f} MiB, worker {measured['zygote_peak_mib']:.0f} MiB"]
    lines += [f"  {phase:8} {phases.get(phase, 0.0) * 1000:7.0f} ms  {what}"
              for phase, what in PHASES.items()]
    lines.append(f"  children's CPU {phases.get('child_user', 0.0) * 1000:.0f} ms user + "
                 f"{phases.get('child_sys', 0.0) * 1000:.0f} ms sys, "
                 f"{phases.get('child_faults', 0.0):.0f} page faults")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # the per-phase child
    args = parser.parse_args()
    if args.one:
        one_check(args.one)
        return
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
    for name, path in FILES.items():
        ran = subprocess.run([sys.executable, __file__, "--one", str(path)], check=True,
                             capture_output=True, text=True)
        print("\n".join(phase_table(name, json.loads(ran.stdout.strip().splitlines()[-1]))))


if __name__ == "__main__":
    main()
