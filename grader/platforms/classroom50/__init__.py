"""Classroom 50: `result.json` (result.py), the assignment's autograder bundle and its run
(autograder.py), and the bundle's script (templates/)."""
