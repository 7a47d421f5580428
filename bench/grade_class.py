"""Batch grading throughput: build a class of N submissions from the known-mistake and
correct-idiom files of the tests, grade it, and report beside a bare torch import.

Prints submissions per second, the per-submission overhead beyond the submission's own probe
time, where a submission's time goes (Report.phases, per phase), and the peak memory of the
grading process and of a worker's zygote. Usage:
    python bench/grade_class.py [--n 1000] [--workers 2] [--lab optim] [--from DIR]
                                [--cluster local:2]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def rss_mib() -> float:
    with open(f"/proc/{os.getpid()}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_ms(before: resource.struct_rusage, after: resource.struct_rusage,
           n: int) -> tuple[float, float]:
    """(user, system) CPU milliseconds per submission between two rusage samples."""
    return ((after.ru_utime - before.ru_utime) * 1000 / n,
            (after.ru_stime - before.ru_stime) * 1000 / n)


def build_class(sources_folder: Path, n: int, folder: Path) -> None:
    """N submissions cycled from the folder's files: two trees compared side by side grade the
    same class when given the same folder."""
    sources = sorted(sources_folder.glob("*.py"))
    for index in range(n):
        shutil.copy(sources[index % len(sources)], folder / f"student{index:05d}.py")


# Report.phases, in the order a submission meets them, with what each one is.
PHASE_NAMES = {
    "ready": "waiting for a fresh zygote's warm-up",
    "fork": "zygote: fork of the child",
    "setup": "child: view, uid drop, seccomp, source scan",
    "import": "child: import of the submission, its API",
    "between": "child: between tasks (tamper checks)",
    "tasks": "child: probes and their records",
    "exit": "child: exit after its last line",
    "reap": "zygote: kill, reap, sweep",
    "wait": "grader: the job, sent to answered (all of the above)",
    "decode": "grader: loading the records",
    "judge": "grader: judging and the report",
    "write": "grader: report and feedback files",
}


def phase_lines(phases: dict[str, float], graded: int) -> list[str]:
    """Milliseconds per graded submission for each phase, then the children's CPU."""
    n = max(graded, 1)
    lines = [f"  {name:8} {phases.get(name, 0.0) * 1000 / n:7.1f} ms  {what}"
             for name, what in PHASE_NAMES.items()]
    lines.append(f"  children's CPU {phases.get('child_user', 0.0) * 1000 / n:.1f} ms user + "
                 f"{phases.get('child_sys', 0.0) * 1000 / n:.1f} ms sys, "
                 f"{phases.get('child_faults', 0.0) / n:.0f} page faults")
    return lines


def bare_import_s() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--lab", default="optim")
    parser.add_argument("--from", dest="sources", type=Path, default=None,
                        help="folder of submissions to cycle (default: the tests' named ones)")
    parser.add_argument("--cluster", default="",
                        help="grade on a Dask cluster (grade --cluster), e.g. local:2")
    args = parser.parse_args()
    sources = args.sources or ROOT / "tests" / "submissions" / args.lab

    from grader.batch import BatchOptions, Executor, LocalExecutor, grade_class
    from grader.engine import CheckOptions

    executor: Executor = LocalExecutor()
    if args.cluster:
        from grader.batch.cluster import ClusterExecutor

        executor = ClusterExecutor(args.cluster)
    import_s = bare_import_s()
    with tempfile.TemporaryDirectory() as tmp:
        subs, out = Path(tmp) / "subs", Path(tmp) / "out"
        subs.mkdir()
        build_class(sources, args.n, subs)
        elapsed: list[float] = []
        probes: list[float] = []
        start_rss = rss_mib()

        marks = {max(1, args.n * tenth // 10): f"{tenth * 10}%" for tenth in (1, 5, 9)}
        sampled: list[tuple[str, float]] = []

        def record(student: str, report, reused: bool) -> None:
            elapsed.append(report.elapsed_s)
            probes.append(report.probe_s)
            if len(elapsed) in marks:  # 10%: after the workers and references warmed up
                sampled.append((marks[len(elapsed)], rss_mib()))

        own_before = resource.getrusage(resource.RUSAGE_SELF)
        sandbox_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        result = grade_class(subs, options=BatchOptions(
            lab=args.lab, out=out, workers=args.workers,
            check=CheckOptions(device="cpu", lang="en")), executor=executor, on_progress=record)
        wall = time.perf_counter() - started
        end_rss = rss_mib()
        # The workers have exited by now: their CPU (and their children's) is accounted.
        own = cpu_ms(own_before, resource.getrusage(resource.RUSAGE_SELF), args.n)
        sandbox = cpu_ms(sandbox_before, resource.getrusage(resource.RUSAGE_CHILDREN), args.n)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    per_sub = wall * args.workers / max(result.students, 1)
    where = (f"{result.cluster_workers} Dask workers ({args.cluster})" if args.cluster
             else f"{args.workers} workers")
    print(f"lab {args.lab}, {result.students} submissions, {where}, {os.cpu_count()} cores")
    print(f"wall {wall:.1f} s -> {result.students / wall:.1f} submissions/s")
    print(f"per submission (worker time): {per_sub * 1000:.0f} ms; of which probes "
          f"{statistics.fmean(probes) * 1000:.0f} ms "
          f"(median {statistics.median(probes) * 1000:.0f}); "
          f"overhead beyond probes {(per_sub - statistics.fmean(probes)) * 1000:.0f} ms")
    print(f"CPU per submission: grading process {own[0]:.0f} ms user + {own[1]:.0f} ms sys; "
          f"sandbox (zygotes and children) {sandbox[0]:.0f} ms user + {sandbox[1]:.0f} ms sys")
    during = ", ".join(f"at {mark} {value:.0f}" for mark, value in sampled)
    print(f"grader RSS (MiB): before torch {start_rss:.0f}, {during}, end (gradebook "
          f"rebuilt) {end_rss:.0f}, peak {peak:.0f}; zygote peak "
          + (f"{result.zygote_peak_mib:.0f}" if not args.cluster else "(on the Dask workers)"))
    print("per submission, by phase (worker time):")
    print("\n".join(phase_lines(result.phases, result.graded)))
    fresh = import_s * result.students / args.workers
    print(f"bare `python -c 'import torch'`: {import_s:.2f} s "
          f"(a fresh process per submission would need {fresh:.0f} s)")


if __name__ == "__main__":
    main()
