"""Running untrusted submissions: never in the grading process.

`Sandbox` (runner.py) starts a zygote process (zygote.py) that imports torch and the lab probes
once, then forks a child per submission (and another after any task that hangs or crashes, so
that only that task is lost). The child (child.py) applies limits, imports the submission, runs
one task per lab function and device, and writes raw observations to files; the grading
process loads them as data (JSON and raw tensor bytes, wire.py) and alone decides scores.
"""

from grader.sandbox.protocol import JobOutcome, TaskOutcome
from grader.sandbox.runner import JobResult, Sandbox, TaskSpec

__all__ = ["JobOutcome", "JobResult", "Sandbox", "TaskOutcome", "TaskSpec"]
