"""What each hostile-code layer costs per child, measured side by side in one process.

    python bench/sandbox_layers.py [--repeat 50]

Each line is a median over `--repeat` runs: a plain fork against a fork into a PID namespace of
its own (with a private /proc), the source scans that moved into the child, the tamper watch,
the audit hook's overhead on a probe-like loop, what a fresh child pays for the reload index and
the tamper watch when it builds them itself or inherits them from the zygote (time and
copy-on-write page faults), and the arena of a tensor_ops task.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def median_ms(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def fork_and_reap(fork: Callable[[], int], in_child: Callable[[], object]) -> None:
    pid = fork()
    if pid == 0:
        in_child()
        os._exit(0)
    os.waitpid(pid, 0)


def in_forked_child(run: Callable[[], float]) -> float:
    """`run()`'s result, computed in a forked child (the audit hook cannot be removed)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, repr(run()).encode())
        os._exit(0)
    os.close(write)
    value = float(os.read(read, 100))
    os.waitpid(pid, 0)
    return value


def in_fresh_fork(run: Callable[[], object]) -> tuple[float, int]:
    """(milliseconds, minor page faults) of `run()` in a freshly forked child: what a child of
    the zygote pays, its pages still shared with the parent."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        started = time.perf_counter()
        run()
        elapsed = (time.perf_counter() - started) * 1000
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        os.write(write, f"{elapsed} {faults}".encode())
        os._exit(0)
    os.close(write)
    elapsed, faults = os.read(read, 100).split()
    os.close(read)
    os.waitpid(pid, 0)
    return float(elapsed), int(faults)


def median_in_fresh_forks(run: Callable[[], object], repeat: int) -> tuple[float, int]:
    samples = [in_fresh_fork(run) for _ in range(repeat)]
    return (statistics.median(s[0] for s in samples),
            int(statistics.median(s[1] for s in samples)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    repeat = parser.parse_args().repeat

    import torch

    from grader.checks import tensors
    from grader.checks.integrity import integrity_uses
    from grader.checks.policy import static_uses
    from grader.checks.source import parse
    from grader.labs.tensor_ops.inputs import build_base, witnessed
    from grader.labs.tensor_ops.plan import lab_cases
    from grader.sandbox import audit, tamper, witness
    from grader.sandbox.child import PROTECTED_PACKAGES
    from grader.sandbox.containment import PidNamespaces, private_proc
    from grader.sandbox.limits import python_paths

    torch.set_num_threads(1)
    plain = median_ms(lambda: fork_and_reap(os.fork, lambda: None), repeat)
    namespaces = PidNamespaces()
    print(f"fork + exit + reap, torch loaded:  plain {plain:.2f} ms")
    if namespaces.available:
        own = median_ms(lambda: fork_and_reap(namespaces.fork, private_proc), repeat)
        print(f"  in a PID namespace with a private /proc: {own:.2f} ms "
              f"(+{own - plain:.2f} ms)")
    else:
        print("  PID namespaces: not available here (not root)")

    source = (ROOT / "solutions" / "optim" / "optimizer.py").read_text()
    names = ["zero_grad", "sgd_step", "SGD", "Adam"]

    def scan() -> None:
        parsed = parse(source)
        static_uses(parsed, package="torch.optim", names=names)
        integrity_uses(parsed, names=names)

    print(f"source scans (policy + integrity) of the optim solution: "
          f"{median_ms(scan, repeat):.2f} ms")
    watch = tamper.watch()
    print(f"tamper watch: snapshot {median_ms(tamper.watch, repeat):.2f} ms, "
          f"compare {median_ms(watch, repeat):.2f} ms")

    def probe_like() -> None:  # what a probe does around a call, many times
        x = torch.zeros(16)
        for _ in range(2000):
            tensors.state(x)
            x.add_(1.0)
            tensors.values(x)

    def with_hook() -> float:
        audit.install(trusted_roots=python_paths(), untrusted_roots=[Path("/nowhere")],
                      report=lambda what: None, report_call=lambda what: None,
                      protected_prefixes=PROTECTED_PACKAGES)
        return median_ms(probe_like, repeat)

    bare = in_forked_child(lambda: median_ms(probe_like, repeat))
    hooked = in_forked_child(with_hook)
    print(f"2,000 probe-like reads and writes: {bare:.2f} ms bare, {hooked:.2f} ms with the "
          f"audit hook (+{hooked - bare:.2f} ms)")

    import gc

    loaded, spaces = audit.loaded_modules(PROTECTED_PACKAGES), tamper.watched()
    gc.collect()
    gc.freeze()  # as the zygote leaves its objects before forking
    own = median_in_fresh_forks(lambda: (audit.loaded_modules(PROTECTED_PACKAGES),
                                         tamper.watch()), repeat)
    inherited = median_in_fresh_forks(lambda: (loaded.current(PROTECTED_PACKAGES),
                                               tamper.watch(spaces)), repeat)
    print(f"reload index and tamper snapshot in a fresh child ({len(sys.modules)} modules): "
          f"built there {own[0]:.2f} ms, {own[1]} page faults; inherited from the zygote "
          f"{inherited[0]:.2f} ms, {inherited[1]} page faults")

    cases = lab_cases("relu_")
    slots = witness.layout(cases, lambda case: witnessed("relu_", case))

    def arena() -> None:
        with tempfile.TemporaryDirectory() as folder:
            shared = witness.Arena(str(Path(folder) / "task.witness"), slots)
            for case in cases:
                if witnessed("relu_", case):
                    shared.share(case["id"], [build_base(case, "cpu")])
            witness.read(str(Path(folder) / "task.witness"), slots)

    print(f"arena of one tensor_ops task ({len(slots)} tensors, "
          f"{witness.size(slots) / 1024:.0f} KiB): map, fill and read back "
          f"{median_ms(arena, repeat):.2f} ms")


if __name__ == "__main__":
    main()
