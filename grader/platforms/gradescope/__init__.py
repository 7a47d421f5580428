"""Gradescope: `results.json` (results.py), the autograder zip and its run (autograder.py),
and the zip's scripts (templates/)."""
