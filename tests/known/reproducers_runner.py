"""Runs reproducers as a student would: `python reproducers_runner.py JOBS.json OUTCOMES.json`.

JOBS is a list of {"folder", "module", "reproducers": {name: code}}: each job's reproducers
run in a fresh process in its folder, which holds the student's MODULE.py, each in its own
namespace with MODULE imported afresh (a reproducer must not depend on what another left in the
module). The processes are forked from this one once torch (and torch.optim's first step) is
loaded, so that each job does not pay for a torch import. A reproducer's outcome is "ok",
"AssertionError", or the type and message of whatever else it raised; a job whose process
died says so for each of its reproducers. Outcomes go to a file: the student's code may print.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import warnings

JOB_SECONDS = 300


def run_job(job: dict) -> dict[str, str]:
    """In the forked child: the job's reproducers, one after another."""
    os.chdir(job["folder"])
    sys.path.insert(0, job["folder"])
    warnings.simplefilter("ignore")
    outcomes = {}
    for name, code in job["reproducers"].items():
        sys.modules.pop(job["module"], None)
        try:
            exec(compile(code, name, "exec"), {"__name__": "__main__"})
        except AssertionError:
            outcomes[name] = "AssertionError"
        except BaseException as exc:  # what a student would see instead of the assertion
            outcomes[name] = f"{type(exc).__name__}: {exc}"[:500]
        else:
            outcomes[name] = "ok"
    return outcomes


def main() -> None:
    import torch

    with warnings.catch_warnings():  # torch.optim's first step imports its compiler
        warnings.simplefilter("ignore")
        p = torch.zeros(1, requires_grad=True)
        p.grad = torch.ones(1)
        torch.optim.SGD([p], lr=0.1).step()
        torch.optim.Adam([p], lr=0.1).step()
    with open(sys.argv[1], encoding="utf-8") as handle:
        jobs: list[dict] = json.load(handle)
    outcomes: dict[str, dict[str, str]] = {}
    for index, job in enumerate(jobs):
        target = os.path.join(job["folder"], f"outcomes-{index}.json")
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                signal.alarm(JOB_SECONDS)
                found = run_job(job)
                with open(target, "w", encoding="utf-8") as handle:
                    json.dump(found, handle)
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.path.exists(target):
            with open(target, encoding="utf-8") as handle:
                outcomes[job["folder"]] = json.load(handle)
        else:
            died = f"the process died (wait status {status})"
            outcomes[job["folder"]] = dict.fromkeys(job["reproducers"], died)
    with open(sys.argv[2], "w", encoding="utf-8") as handle:
        json.dump(outcomes, handle)


if __name__ == "__main__":
    main()
