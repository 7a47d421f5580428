"""The library API: grade one submission and return a `Report` (api.py).

One module per concern, each reading the one before it: what a submission is graded against
(context.py, rubric.py), running it in the sandbox (observe.py), what each sandbox result means
for a function (outcomes.py), scoring (scoring.py: findings and points, no words), and the
rows in the student's words, once, at the end (wording.py).
"""

from grader.engine.api import (
    DoesNotImport,
    check_submission,
    error_report,
    grade_submission,
    grade_upload,
    internal_error,
    nothing_to_grade,
)
from grader.engine.context import CheckOptions, GradingContext, resolve_devices
from grader.engine.rubric import (
    check_instructor_input,
    effective_rubric,
    hidden_plan,
    overridden,
    unit_points,
    unit_points_split,
)
from grader.engine.scoring import JudgeError

__all__ = ["CheckOptions", "DoesNotImport", "GradingContext", "JudgeError",
           "check_instructor_input", "check_submission", "effective_rubric", "error_report",
           "grade_submission", "grade_upload", "hidden_plan", "internal_error",
           "nothing_to_grade", "overridden", "resolve_devices", "unit_points",
           "unit_points_split"]
