"""Lab `optim` (file `optimizer.py`): zero_grad, sgd_step, SGD and Adam in place.

plan.py lists the cases and signatures and inputs.py builds their seeded tensors (both
processes); probes.py runs in the sandbox child and imports only those two; reference.py and
judge.py (the checks table over checks/core.py) run in the grading process.
"""

FILENAME = "optimizer.py"  # the stub students fill in (grader.labs discovers labs by folder)
