"""A submission that patches torch, tensor methods, the testing helpers or builtins is named."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from grader.engine import CheckOptions, check_submission
from grader.models import Report
from tests.conftest import SharedSandboxes

SGD_BODY = "    with torch.no_grad():\n        for p in params:"


@pytest.fixture
def grade(sandboxes: SharedSandboxes) -> Callable[[Path], Report]:
    """`check`'s route: its sandbox (no preload), shared, each submission in a fresh child."""

    def graded(path: Path) -> Report:
        return check_submission(path, lab="optim", options=CheckOptions(device="cpu", lang="en"),
                                sandbox=sandboxes("optim", preload=False))

    return graded


def test_patching_at_import_fails_every_function_with_the_name(make_submission, grade) -> None:
    path = make_submission(prelude="import torch\ntorch.Tensor.data_ptr = lambda self: 0\n")
    report = grade(path)
    assert report.score == 0
    assert {c.kind for c in report.checks if c.status == "failed"} == {"runtime"}
    assert "torch.Tensor.data_ptr" in report.checks[0].message


def test_patching_inside_one_function_costs_that_function_only(make_submission, grade) -> None:
    patch = ("    import torch.testing\n"
             "    torch.testing.assert_close = lambda *args, **kwargs: None\n")
    path = make_submission((SGD_BODY, patch + SGD_BODY))
    report = grade(path)
    failed = [c for c in report.checks if c.status == "failed"]
    assert {c.function for c in failed} == {"sgd_step"}
    assert [c.kind for c in failed] == ["runtime"]
    assert "torch.testing.assert_close" in failed[0].message
    # The tasks after it ran in a fresh child, with torch as it was.
    assert all(c.status != "failed" for c in report.checks if c.function in ("SGD", "Adam"))


def test_patching_builtins_is_named(make_submission, grade) -> None:
    loop = "    for p in params:\n        if p.grad is None:\n            continue\n"
    patch = "    import builtins\n    builtins.id = lambda obj: 0\n"
    path = make_submission((loop + "        if set_to_none:",
                            patch + loop + "        if set_to_none:"))
    report = grade(path)
    zero_grad = [c for c in report.checks if c.function == "zero_grad" and c.status == "failed"]
    assert zero_grad and "builtins.id" in zero_grad[0].message


def test_protections_come_from_the_worker_never_from_a_record(make_submission,
                                                              monkeypatch, grade) -> None:
    """A record that claims layers (forged past every other layer: here by the test, in the
    grading process) changes nothing the report says was in force."""
    from grader.sandbox import runner

    load = runner.Sandbox._load

    def forged(*args):
        record = load(*args)
        if record is not None:
            record["limits"] = ["bubblewrap", "gVisor"]
        return record

    monkeypatch.setattr(runner.Sandbox, "_load", staticmethod(forged))
    report = grade(make_submission())
    assert report.score == report.max_score
    assert "bubblewrap" not in report.protections and "gVisor" not in report.protections
    assert "separate process" in report.protections


def test_a_planted_key_equal_to_two_names_cannot_hide_a_swap() -> None:
    """Names are compared by identity too: a str subclass that equals two names would let
    two bindings swap under an `==` comparison of the names."""
    import types

    from grader.sandbox import tamper

    victim = types.ModuleType("victim")
    victim.check = lambda: "check"  # type: ignore[attr-defined]
    victim.always = lambda: "always"  # type: ignore[attr-defined]
    changes = tamper.watch({"victim": victim})
    check, always = victim.check, victim.always  # type: ignore[attr-defined]

    class Twin(str):  # hashes as another name, and equals both
        def __new__(cls, text: str, hashed_as: str) -> Twin:
            twin = super().__new__(cls, text)
            twin.hashed_as = hashed_as  # type: ignore[attr-defined]
            return twin

        def __hash__(self) -> int:
            return hash(self.hashed_as)  # type: ignore[attr-defined]

        def __eq__(self, other: object) -> bool:
            return other in ("check", "always")

    del victim.check, victim.always  # type: ignore[attr-defined]
    # In the same places and with the same values as before, but `victim.check` now finds
    # the key hashed as "check", which holds `always`.
    vars(victim)[Twin("check", hashed_as="always")] = check
    vars(victim)[Twin("always", hashed_as="check")] = always
    assert victim.check is always  # type: ignore[attr-defined]
    assert "victim.check" in changes()
