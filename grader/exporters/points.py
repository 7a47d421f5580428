"""Points where a format counts only whole numbers (Classroom 50's scores, a JUnit reader that
counts passed cases): every check's points multiplied by one scale that makes them whole."""

from __future__ import annotations

from collections.abc import Iterable

SCALES = (1, 2, 4, 10, 100)  # halves, quarters, tenths, hundredths of a point


def points_scale(points: Iterable[float]) -> int:
    """The smallest scale that makes all these points whole (100 at most)."""
    values = list(points)
    for scale in SCALES:
        if all(abs(value * scale - round(value * scale)) < 1e-9 for value in values):
            return scale
    return SCALES[-1]
