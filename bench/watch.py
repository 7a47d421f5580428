"""`check --watch`: from a save to the new report, as a ratio to a bare `import torch`.

One run, alternating so that machine load affects both alike: (a) the wall time of
`python -c "import torch"`, (b) the time from writing a changed copy of the optim solution (a
comment with a counter: the same checks, new content) to its report reaching the callback of
the library's loop (grader/watch: one sandbox worker kept warm). Medians of N each; the ratio
is the number to compare across machines. Then where a re-grade's time goes: the wait for the
file event (watchfiles' debounce step), and the report's phases (Report.phases: the child's
fork, setup, import, tasks; decoding and judging here), medians over the same runs; and the
first report, from the loop's start (the worker's warm-up included).
Usage: python bench/watch.py [--n 9] [--preload torch._dynamo | --preload ""] [--step-ms 25]
"""

from __future__ import annotations

import argparse
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.engine import CheckOptions  # noqa: E402
from grader.sandbox.runner import BATCH_PRELOAD  # noqa: E402
from grader.watch import Run, watch_submission  # noqa: E402
from grader.watch.loop import STEP_MS  # noqa: E402

SOLUTION = ROOT / "solutions" / "optim" / "optimizer.py"
# The phases of a re-grade in the order it meets them (bench/check_time.py names the rest).
PHASES = {
    "fork": "zygote: fork of the child",
    "setup": "child: view, uid drop, seccomp, source scan",
    "import": "child: import of the submission, its API",
    "tasks": "child: probes and their records",
    "exit": "child: exit after its last line",
    "wait": "grader: the job, send to outcome (the child's phases above)",
    "decode": "grader: loading the records",
    "judge": "grader: judging and the report",
}


def bare_import() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=9)
    parser.add_argument("--preload", default=",".join(BATCH_PRELOAD),
                        help="modules the worker imports once, comma-separated (default: "
                             "the loop's own, %(default)s; '' for none)")
    parser.add_argument("--step-ms", type=int, default=STEP_MS)
    args = parser.parse_args()
    preload = tuple(module for module in args.preload.split(",") if module)
    source = SOLUTION.read_text()
    runs: queue.Queue[tuple[float, Run]] = queue.Queue()
    stop = threading.Event()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "optimizer.py"
        path.write_text(source)
        bare_import()  # the page cache, once
        started = time.monotonic()
        loop = threading.Thread(target=watch_submission, kwargs=dict(
            path=path, lab="optim", options=CheckOptions(device="cpu"), stop_event=stop,
            on_run=lambda run: runs.put((time.monotonic(), run)), preload=preload,
            step_ms=args.step_ms))
        loop.start()
        try:
            delivered, _ = runs.get(timeout=120)
            first_s = delivered - started
            time.sleep(1.0)  # past the loop's first look at the file (WAKE_MS)
            imports, saves, waits, phases = [], [], [], []
            for counter in range(args.n):
                imports.append(bare_import())
                saved = time.monotonic()
                path.write_text(f"{source}\n# save {counter}\n")
                delivered, run = runs.get(timeout=60)
                assert run.report is not None and run.report.score == run.report.max_score, run
                saves.append(delivered - saved)
                waits.append(delivered - saved - run.report.elapsed_s)
                phases.append({**run.report.phases, "elapsed": run.report.elapsed_s})
                time.sleep(0.2)
        finally:
            stop.set()
            loop.join(timeout=30)
    bare, save = statistics.median(imports), statistics.median(saves)
    print(f"preload {preload or '(none)'}, step {args.step_ms} ms, {args.n} saves")
    print(f"bare `import torch`      {bare:6.3f} s (median; min {min(imports):.3f})")
    print(f"save to new report       {save:6.3f} s (median; min {min(saves):.3f}, "
          f"max {max(saves):.3f})")
    print(f"ratio                    {save / bare:6.3f}x  (goal: at most 0.2x)")
    print(f"first report             {first_s:6.3f} s from the loop's start "
          f"({first_s / bare:.2f}x; the worker's warm-up and the lab's import included)")
    print("where a re-grade's time goes (medians):")
    print(f"  {'event':8} {statistics.median(waits) * 1000:7.1f} ms  the save to the run's "
          "start: the file event and its quiet step")
    for phase, what in PHASES.items():
        median = statistics.median(p.get(phase, 0.0) for p in phases)
        print(f"  {phase:8} {median * 1000:7.1f} ms  {what}")
    rest = statistics.median(
        p["elapsed"] - sum(p.get(k, 0.0) for k in ("wait", "decode", "judge")) for p in phases)
    print(f"  {'rest':8} {rest * 1000:7.1f} ms  grader: reading and hashing the file, the "
          "lab's context, the report's assembly")

if __name__ == "__main__":
    main()
