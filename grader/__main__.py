"""`python -m grader` is the same as the `inplace-grader` command."""

from grader.cli import main

main()
