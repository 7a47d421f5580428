"""What the platform tests share."""

from __future__ import annotations

import pytest

from tests.platforms.test_nbgrader import Course, autograde_a_class


@pytest.fixture(scope="session")
def autograded_course(tmp_path_factory: pytest.TempPathFactory) -> Course:
    """One nbgrader course autograded once (four kernels, nbgrader's own runs) for the tests
    that read it, one xdist group: test_nbgrader.py and test_nbgrader_verify.py."""
    return autograde_a_class(tmp_path_factory.mktemp("nbgrader") / "course")
