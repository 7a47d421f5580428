"""The class report page on a large class: time and the grading process's memory, with the
reports streamed from disk (as `grade` writes report.html) beside all of them held at once.

Builds N reports by grading a few known submissions once and copying their reports under new
student names, then writes report.html both ways, each in a fresh process (peak RSS is a
process's own). Usage: python bench/class_report.py [--n 1000]

Measured (torch 2.13.0, 1000 optim reports): peak +51 MiB streamed, the libraries included,
against +166 MiB with every report held at once: why `ClassTally` (grader/exporters/
html_report.py) takes one report at a time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SOURCES = ["reference_copy", "sgd_step_data_assign", "sgd_step_numpy", "Adam_eps_inside_sqrt",
           "SGD_momentum_buffer_rebuilt", "raises_at_import"]


def build_class(out: Path, n: int) -> None:
    from grader.engine import CheckOptions, check_submission
    from grader.grades import REPORTS
    from grader.sandbox import Sandbox

    (out / REPORTS).mkdir(parents=True)
    graded = []
    with Sandbox(["optim"]) as sandbox:
        for name in SOURCES:
            path = ROOT / "tests" / "submissions" / "optim" / f"{name}.py"
            graded.append(check_submission(path, lab="optim", sandbox=sandbox,
                                           options=CheckOptions(device="cpu")))
    for index in range(n):
        student = f"s{index:05d}"
        report = graded[index % len(graded)].model_copy(update={"student": student})
        (out / REPORTS / f"{student}.json").write_text(report.model_dump_json(indent=2))


def one_run(out: Path, how: str) -> dict[str, float]:
    """In a fresh process: write the page `how` (stream or list); seconds and peak RSS."""
    from grader.exporters.html_report import class_report_html
    from grader.grades import load_reports, write_atomically, write_class_report

    Path("/proc/self/clear_refs").write_text("5")  # the peak from here on, not the imports'
    before = peak_mib()
    started = time.perf_counter()
    if how == "stream":
        write_class_report(out, lab="optim")
    else:
        write_atomically(out / "report.html", class_report_html(load_reports(out), lab="optim"))
    return {"seconds": time.perf_counter() - started, "rss_before": before,
            "rss_peak": peak_mib()}


def peak_mib() -> float:
    """This process's peak resident memory since it was last reset (VmHWM)."""
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # OUT HOW, the child
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(Path(args.one[0]), args.one[1])))
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        build_class(out, args.n)
        print(f"{args.n} reports, {sum(p.stat().st_size for p in out.rglob('*.json')) >> 20} MiB")
        for how in ("stream", "list"):
            run = subprocess.run([sys.executable, __file__, "--one", str(out), how],
                                 capture_output=True, text=True, check=True)
            found = json.loads(run.stdout.strip().splitlines()[-1])
            print(f"{how:>6}: {found['seconds']:.2f} s, peak RSS {found['rss_peak']:.0f} MiB "
                  f"(+{found['rss_peak'] - found['rss_before']:.0f} over the imports), "
                  f"page {(out / 'report.html').stat().st_size >> 10} KiB")


if __name__ == "__main__":
    main()
