"""The grading process's memory against submissions built to inflate it, side by side with an
honest one, each graded in a fresh process (its peak RSS is then that submission's alone).

    python bench/hostile_memory.py

Attacks: a default argument with an 8 MB repr (it used to travel in the API record), a source
just under the 1 MiB limit made of trivial statements (its syntax tree is built in the child
now), one over the limit (refused before any parse), a result file forged with a 60 MB header
and a 100,000-deep nesting, announced as done on the progress pipe.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = (ROOT / "solutions" / "optim" / "optimizer.py").read_text()

FORGE = '''

def zero_grad(params, set_to_none=False):  # fills every result file, then claims it is done
    import os, stat
    junk = (8 * 2**20).to_bytes(8, "little") + b"[" * 100_000 + b"]" * 100_000
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            mode = os.fstat(fd).st_mode
            if fd > 2 and stat.S_ISREG(mode):
                os.pwrite(fd, junk + b" " * (60 * 2**20), 0)
            elif fd > 2 and stat.S_ISFIFO(mode):
                os.write(fd, b"D 0\\nnonsense\\n")  # the worker stops it at once
        except OSError:
            pass
'''

ATTACKS = {
    "honest solution": SOLUTION,
    # The same failing zero_grad with a small default: what judging those failures costs.
    "8 B default (control)": SOLUTION + "\n\ndef zero_grad(params, set_to_none='x' * 8):\n"
                                        "    pass\n",
    "8 MB default repr": SOLUTION + "\n\ndef zero_grad(params, set_to_none='x' * 8_000_000):\n"
                                    "    pass\n",
    "0.99 MiB of `x = 1`": SOLUTION + "x = 1\n" * 171_000,
    "1.1 MiB of `x = 1`": SOLUTION + "x = 1\n" * 200_000,
    "forged 60 MB record": SOLUTION + FORGE,
}

MEASURE = '''
import resource, sys
from pathlib import Path
from grader.engine import CheckOptions, check_submission
from grader.submission import SubmissionError
try:
    report = check_submission(Path(sys.argv[1]), lab="optim",
                              options=CheckOptions(device="cpu"))
    outcome = f"{report.score:g}/{report.max_score:g}"
except SubmissionError as exc:
    outcome = "refused: " + str(exc)[:60]
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, outcome)
'''


def main() -> None:
    print(f"{'submission':24s} {'peak RSS (MiB)':>15s}  outcome")
    with tempfile.TemporaryDirectory() as folder:
        for name, source in ATTACKS.items():
            path = Path(folder) / "optimizer.py"
            path.write_text(source)
            done = subprocess.run([sys.executable, "-c", MEASURE, str(path)], cwd=ROOT,
                                  capture_output=True, text=True)
            if done.returncode:
                last = (done.stderr.strip().splitlines() or ["?"])[-1]
                print(f"{name:24s} {'-':>15s}  the grading process crashed: {last[:70]}")
                continue
            peak, _, outcome = done.stdout.strip().splitlines()[-1].partition(" ")
            print(f"{name:24s} {peak:>15s}  {outcome}")


if __name__ == "__main__":
    main()
