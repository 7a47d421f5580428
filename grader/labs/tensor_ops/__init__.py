"""Lab `tensor_ops` (file `tensor_ops.py`): in-place utilities, exact allocation tracking.

cases.py builds seeded inputs for both processes; probes.py runs in the sandbox child;
reference.py and judge.py run in the grading process.
"""
