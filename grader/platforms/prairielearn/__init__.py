"""PrairieLearn: `results.json` (results.py), the external grader's folder and its run
(autograder.py, `python -m grader.platforms.prairielearn`), and the folder's entrypoint
(templates/run)."""
