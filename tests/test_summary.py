"""The class summary: what most of the class got wrong, ranked so that it reads as such."""

from __future__ import annotations

from grader.summary import Standing, summarize


def student(name: str, lost: dict[str, float]) -> Standing:
    return Standing(student=name, score=10, max_score=20, error="", points={},
                    failed={check: check.replace("_", " ") for check in lost}, lost=lost)


def test_most_failed_ranks_by_students_then_points_lost_and_skips_one_student_checks() -> None:
    summary = summarize([
        student("ana", {"a.values": 1, "b.storage": 4, "z.only_ana": 9}),
        student("ben", {"a.values": 1, "b.storage": 4, "c.version": 2}),
        student("cho", {"a.values": 1, "c.version": 2}),
        student("dev", {"a.values": 1, "b.storage": 4, "c.version": 2}),
    ])
    ranked = [(f.check_id, f.students) for f in summary.most_failed]
    # a.values: 4 students; b.storage and c.version: 3 each, b lost more points; z: one only.
    assert ranked == [("a.values", 4), ("b.storage", 3), ("c.version", 3)]
