"""`check --watch`: grade a submission again each time it is saved (loop.py), and the screen
a student keeps open beside the editor (screen.py)."""

from grader.watch.loop import Changes, Run, changes, watch_submission

__all__ = ["Changes", "Run", "changes", "watch_submission"]
