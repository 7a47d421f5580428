"""GitHub Classroom: the `result` a grading step hands the autograding reporter
(classroom-resources/autograding-grading-reporter), in result.py; the workflow that runs it is
in docs/github-classroom.md."""
