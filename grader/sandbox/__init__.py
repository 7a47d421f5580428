"""Running untrusted submissions: never in the grading process.

`Sandbox` (runner.py) starts a zygote process (zygote.py) that imports torch and the lab probes
once, then forks one child per unit of work (one lab function on one device). The child
(child.py) applies limits, imports the submission, runs the lab's probes and writes raw
observations to a file; the grading process loads them with `torch.load(weights_only=True)` and
alone decides scores.
"""

from grader.sandbox.protocol import Unit, UnitOutcome
from grader.sandbox.runner import Sandbox

__all__ = ["Sandbox", "Unit", "UnitOutcome"]
