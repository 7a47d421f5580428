"""The packages: grader/, and the labs' reference solutions as grader/solutions/.

solutions/ stays the single source of the solutions (the stubs, the tests and the course's own
copy read it there); installed, they ship inside the package, so that a grader installed from
a wheel builds nbgrader's notebooks from them (grader/distribution.py). Everything else about
the project is in pyproject.toml.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["grader*"]), "grader.solutions"],
    package_dir={"grader.solutions": "solutions"},
)
