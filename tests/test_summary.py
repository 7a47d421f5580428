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


def test_every_student_is_counted_once_in_one_of_three_words() -> None:
    from grader.summary import NOT_GRADABLE, NOT_IMPORTED, counts_text, summary_text

    def row(name: str, score: float, status: str = "graded") -> Standing:
        return Standing(student=name, score=score, max_score=10, error="", points={},
                        failed={}, status=status)

    summary = summarize([row("ana", 10), row("ben", 5), row("cho", 0, NOT_IMPORTED),
                         row("dev", 0, NOT_GRADABLE)])
    assert (summary.students, summary.graded, summary.not_imported, summary.not_gradable) == (
        4, 2, 1, 1)
    assert counts_text(summary) == "4 students: 2 graded, 1 did not import, 1 not gradable"
    assert summary.mean_percent == 50.0  # (100 + 50 + 0) / 3: not gradable left out
    assert summary_text(summary).startswith(
        "4 students: 2 graded, 1 did not import, 1 not gradable; mean 50.0%, median 50.0% "
        "over the 3 whose code ran")
