"""Issue 26, weakness 4: a record is checked against the case that produced it, not only for
its types, before any judge reads it. A record of the right types with one parameter too many
(or a copy of another shape) is no result: the function fails as a runtime failure whose debug
says why, and no judge raises (which would be the grader's own error, exit 3)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch

from grader.engine import CheckOptions, check_submission
from grader.labs import LAB_FILES, get_lab
from grader.labs.records import MalformedRecord, checked
from grader.sandbox import runner
from tests.conftest import SharedSandboxes

SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"
STATE = {"ptr": 1, "version": 0, "is_leaf": True, "requires_grad": True, "grad_fn": None,
         "exact_type": True}


def _sgd_param(shape: list[int]) -> dict[str, Any]:
    return {"state_before": STATE, "state_after": {**STATE, "version": 1},
            "values": torch.zeros(shape), "alias_values": torch.zeros(shape),
            "grad_untouched": True}


def _case(lab: str, function: str, case_id: str) -> dict[str, Any]:
    return next(c for c in get_lab(lab).cases(function) if c["id"] == case_id)


def test_a_record_of_its_case_passes() -> None:
    case = _case("optim", "sgd_step", "no_grad")
    record = {"error": None, "params": [_sgd_param(s) for s in case["shapes"]]}
    assert checked(get_lab("optim").record_type("sgd_step", case), record) is record


@pytest.mark.parametrize("change", ["extra", "missing", "shape", "dtype"])
def test_sgd_step_record_not_of_its_case_is_refused(change: str) -> None:
    case = _case("optim", "sgd_step", "no_grad")
    params = [_sgd_param(s) for s in case["shapes"]]
    if change == "extra":
        params.append(_sgd_param([1]))
    elif change == "missing":
        params.pop()
    elif change == "shape":
        params[0]["alias_values"] = torch.zeros(3)
    else:
        params[0]["alias_values"] = params[0]["alias_values"].double()
    with pytest.raises(MalformedRecord, match="not of its case"):
        checked(get_lab("optim").record_type("sgd_step", case),
                {"error": None, "params": params})


def test_a_trajectory_longer_than_its_case_is_refused() -> None:
    case = next(c for c in get_lab("optim").cases("SGD") if c["probe"] == "trajectory")
    step = {"error": None, "params": [
        {"values": torch.zeros(s), "state_before": STATE, "state_after": STATE,
         "had_grad": True, "grad_untouched": True, "state": {"missing": True}}
        for s in case["shapes"]]}
    record = {"error": None, "steps": [copy.deepcopy(step) for _ in range(case["steps"] + 1)]}
    with pytest.raises(MalformedRecord, match="steps"):
        checked(get_lab("optim").record_type("SGD", case), record)


def test_fixed_block_allocation_of_another_size_is_refused() -> None:
    case = _case("autograd", "fixed_block", "allocation")
    record = {"error": None, "allocations": [], "numel": 7}
    with pytest.raises(MalformedRecord, match="numel"):
        checked(get_lab("autograd").record_type("fixed_block", case), record)


def test_a_failed_record_fits_every_case() -> None:
    failed = {"error": {"type": "AttributeError", "bases": ["AttributeError", "Exception"],
                        "message": "no sgd_step"}}
    for lab in LAB_FILES:
        for function in get_lab(lab).functions:
            for case in get_lab(lab).cases(function):
                assert checked(get_lab(lab).record_type(function, case), failed) is failed


def test_an_extra_parameter_costs_the_function_not_the_grader(
        monkeypatch: pytest.MonkeyPatch, sandboxes: SharedSandboxes) -> None:
    """The forged record of issue 26: one parameter added to each of zero_grad's records
    (which made a judge raise: exit 3, "a bug in the grader")."""
    load = runner.Sandbox._load

    def forged(*args: Any) -> Any:
        record = load(*args)
        cases = ((record or {}).get("observations") or {}).get("cases") or {}
        for observed in cases.values():
            if isinstance(observed, dict) and isinstance(observed.get("params"), list) and (
                    observed["params"] and "grad_is_none" in observed["params"][0]):
                observed["params"].append(copy.deepcopy(observed["params"][0]))
        return record

    monkeypatch.setattr(runner.Sandbox, "_load", staticmethod(forged))
    report = check_submission(SOLUTIONS / "optim" / "optimizer.py", lab="optim",
                              options=CheckOptions(device="cpu"), sandbox=sandboxes("optim"))
    lost = [c for c in report.checks if c.function == "zero_grad" and c.status == "failed"]
    assert lost and all(c.kind == "runtime" and "not of its case" in c.debug for c in lost), [
        (c.id, c.kind, c.debug) for c in lost]
    assert all(c.status != "failed" for c in report.checks if c.function == "sgd_step")
