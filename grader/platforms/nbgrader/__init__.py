"""nbgrader: the source notebook generated from solutions/ (source.py), the grade cells'
`grade_function` run in the student's kernel (kernel.py), which notebook cells are the
grader's rather than the student's (cells.py), and the recorded points checked outside the
kernels (verify.py)."""
