"""Lab `autograd` (file `autograd_inplace.py`): in-place operations meet autograd.

cases.py builds seeded inputs for both processes; probes.py runs in the sandbox child;
reference.py and judge.py run in the grading process.
"""
