"""Records are checked at the trust boundary: one of another shape costs the child's
function (a result the grader could not read), and a judge that raises on a checked record
is the grader's own bug (an internal error), never feedback that blames the student."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from grader.engine import CheckOptions, JudgeError, check_submission
from grader.labs import get_lab
from grader.labs.records import MalformedRecord, checked
from grader.labs.tensor_ops.records import record_type
from grader.sandbox import runner
from tests.conftest import SharedSandboxes

SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"
STATE = {"ptr": 1, "version": 0, "is_leaf": True, "requires_grad": False, "grad_fn": None,
         "exact_type": True}


def _state_record(**changes: object) -> dict:
    record = {"error": None, "returned_is_x": True, "returned_type": "Tensor",
              "returned_dtype": "float32", "state_before": STATE, "state_after": STATE,
              "values": torch.ones(2), "alias_values": torch.ones(2),
              "base_values": torch.ones(2), "other_untouched": True}
    record.update(changes)
    return record


def test_a_record_of_its_probes_type_passes_as_it_is() -> None:
    record = _state_record()
    assert checked(record_type("relu_", {"measure": "state"}), record) is record


@pytest.mark.parametrize("change", [
    {"values": [1.0, 1.0]},            # a list where a tensor belongs
    {"returned_is_x": "yes"},          # a string where a bool belongs
    {"smuggled": 1},                   # a key no probe writes
    {"state_after": {"ptr": 1}},       # a state without its fields
], ids=["list_for_tensor", "str_for_bool", "extra_key", "partial_state"])
def test_a_record_of_another_shape_is_refused(change: dict) -> None:
    with pytest.raises(MalformedRecord):
        checked(record_type("relu_", {"measure": "state"}), _state_record(**change))


def test_a_missing_function_s_record_is_a_failed_one() -> None:
    failed = {"error": {"type": "AttributeError", "bases": ["AttributeError", "Exception"],
                        "message": "no relu_", "location": "", "traceback": ""}}
    assert checked(record_type("relu_", {"measure": "state"}), failed) is failed


def test_a_malformed_record_costs_its_function_only(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     sandboxes: SharedSandboxes) -> None:
    load = runner.Sandbox._load

    def malformed(*args):
        record = load(*args)
        cases = ((record or {}).get("observations") or {}).get("cases") or {}
        for observed in cases.values():
            if isinstance(observed, dict) and "returned_is_x" in observed and (
                    observed.get("returned_dtype") == "float64"):
                observed["values"] = observed["values"].tolist()  # not a tensor any more
        return record

    monkeypatch.setattr(runner.Sandbox, "_load", staticmethod(malformed))
    report = check_submission(SOLUTIONS / "tensor_ops" / "tensor_ops.py", lab="tensor_ops",
                              options=CheckOptions(device="cpu"),
                              sandbox=sandboxes("tensor_ops"))
    failed = [c for c in report.checks if c.status == "failed"]
    assert failed and all(c.kind == "runtime" for c in failed), [c.message for c in failed]
    assert all("malformed record" in c.debug and c.flagged for c in failed)
    assert any("does not fit the case" in line for line in report.integrity)


def test_a_judge_that_raises_is_the_graders_error(sandboxes: SharedSandboxes) -> None:
    check = get_lab("tensor_ops").check("relu_.values")
    original = check.judge

    def bug(evidence):
        raise KeyError("a key the probe never wrote")

    object.__setattr__(check, "judge", bug)  # CheckSpec is frozen: the lab's own table
    try:
        with pytest.raises(JudgeError, match=r"relu_\.values"):
            check_submission(SOLUTIONS / "tensor_ops" / "tensor_ops.py", lab="tensor_ops",
                             options=CheckOptions(device="cpu"),
                             sandbox=sandboxes("tensor_ops"))
    finally:
        object.__setattr__(check, "judge", original)
