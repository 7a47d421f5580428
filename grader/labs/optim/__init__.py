"""Lab `optim` (file `optimizer.py`): zero_grad, sgd_step, SGD and Adam in place.

cases.py builds seeded inputs for both processes; probes.py runs in the sandbox child;
reference.py and judge.py run in the grading process.
"""
