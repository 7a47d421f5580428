"""`from grader.notebook import grade_function`: the name every nbgrader test cell imports.

Kept at the top of the package because notebooks already handed out to students call it by
this name; the code is nbgrader's, in grader/platforms/nbgrader/kernel.py.
"""

from grader.platforms.nbgrader.kernel import NotInNotebookError, grade_function, kernel_source

__all__ = ["NotInNotebookError", "grade_function", "kernel_source"]
