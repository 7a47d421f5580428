"""The outside witness: the caller's tensors live in a file the grading process reads itself."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from grader.engine import CheckOptions, check_submission
from grader.sandbox import runner
from grader.sandbox.witness import Arena, layout, read
from tests.conftest import SharedSandboxes

OUT_OF_PLACE = '''
import torch

def sgd_step(params, lr):
    for p in params:
        if p.grad is not None:
            p.data = p.data - lr * p.grad  # new memory: the caller's stays as it was
'''


def test_arena_tensors_are_plain_leaves_whose_writes_reach_the_file(tmp_path: Path) -> None:
    cases = [{"id": "a"}, {"id": "b"}]
    slots = layout(cases, lambda case: [("float32", (3, 4)), ("float64", (5,))])
    path = str(tmp_path / "task.witness")
    arena = Arena(path, slots)
    p, q = arena.share("a", [torch.randn(3, 4).requires_grad_(), torch.randn(5).double()])
    assert p.is_leaf and p._base is None and p.requires_grad and not q.requires_grad
    before = q._version
    with torch.no_grad():
        p.add_(1.0)
    assert q._version == before  # each has a version counter of its own
    memory = read(path, slots)
    assert torch.equal(memory["a"][0], p.detach()) and memory["b"][0].shape == (3, 4)
    assert read(str(tmp_path / "missing"), slots) == {}


def test_a_forged_record_loses_to_the_callers_memory(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     sandboxes: SharedSandboxes) -> None:
    """A record forged past every other layer (here by the test, in the grading process)
    claims an out-of-place sgd_step wrote in place; the memory the grader reads says not."""
    path = tmp_path / "optimizer.py"
    path.write_text(OUT_OF_PLACE)
    load = runner.Sandbox._load

    def forged(*args):
        record = load(*args)
        for observed in ((record or {}).get("observations") or {}).get("cases", {}).values():
            for param in observed.get("params", []) if isinstance(observed, dict) else []:
                if "alias_values" in param:
                    param["alias_values"] = param["values"]
                    param["state_after"] = {**param["state_after"],
                                            "ptr": param["state_before"]["ptr"]}
        return record

    monkeypatch.setattr(runner.Sandbox, "_load", staticmethod(forged))
    report = check_submission(path, lab="optim", options=CheckOptions(device="cpu"),
                              sandbox=sandboxes("optim", preload=False))
    sgd = [c for c in report.checks if c.function == "sgd_step" and c.status == "failed"]
    assert [c.kind for c in sgd] == ["runtime"], [c.message for c in sgd]
    assert "disagrees with the caller's memory" in sgd[0].message
    assert sgd[0].flagged  # a changed record is the instructor's to review, too
    assert any("disagrees with the caller's memory" in line for line in report.integrity)


def test_a_case_whose_witnessed_tensors_are_empty_needs_no_arena(tmp_path: Path) -> None:
    slots = layout([{"id": "empty"}], lambda case: [("float32", (0, 5))])
    Arena(str(tmp_path / "never.witness"), slots)  # nothing to map: no file is made
    memory = read(str(tmp_path / "never.witness"), slots)
    assert memory["empty"][0].shape == (0, 5)


SOLUTION = (Path(__file__).resolve().parents[2] / "solutions" / "optim" / "optimizer.py")

# Each: a function that does not write the caller's memory, and a forgery of its record (made
# past every other layer: here by the test, in the grading process) that says it did.
NOT_ZEROED = '''

def zero_grad(params, set_to_none=False):
    for p in params:
        if p.grad is not None:
            p.grad = torch.zeros_like(p.grad)  # a new tensor: the caller's grad keeps its values
'''
SGD_OUT_OF_PLACE = '''

class SGD(SGD):
    @torch.no_grad()
    def step(self):
        for p in self.params:
            if p.grad is not None:
                p.data = p.data - self.lr * p.grad  # new memory every step
'''


def _claim_zeroed(observed: dict) -> None:
    for param in observed.get("params", []):
        if "grad_values" in param and param.get("alias_values") is not None:  # zero_grad's
            param["alias_values"] = torch.zeros_like(param["alias_values"])
            param["same_object"] = True
            if param.get("state_before"):
                param["state_after"] = dict(param["state_before"],
                                            version=param["state_before"]["version"] + 1)


def _claim_kept_memory(observed: dict) -> None:
    steps = observed.get("steps") or []
    for index, first in enumerate(steps[0]["params"] if steps else []):
        ptr = first["state_before"]["ptr"]
        for step in steps:
            step["params"][index]["state_before"]["ptr"] = ptr
            step["params"][index]["state_after"]["ptr"] = ptr


@pytest.mark.parametrize(("function", "override", "forge"), [
    ("zero_grad", NOT_ZEROED, _claim_zeroed),
    ("SGD", SGD_OUT_OF_PLACE, _claim_kept_memory),
], ids=["zero_grad", "SGD"])
def test_a_forged_record_of_each_witnessed_function_loses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, function: str, override: str,
        forge, sandboxes: SharedSandboxes) -> None:
    path = tmp_path / "optimizer.py"
    path.write_text(SOLUTION.read_text() + override)
    load = runner.Sandbox._load

    def forged(*args):
        record = load(*args)
        for observed in ((record or {}).get("observations") or {}).get("cases", {}).values():
            if isinstance(observed, dict):
                forge(observed)
        return record

    monkeypatch.setattr(runner.Sandbox, "_load", staticmethod(forged))
    report = check_submission(path, lab="optim", options=CheckOptions(device="cpu"),
                              sandbox=sandboxes("optim", preload=False))
    failed = [c for c in report.checks if c.function == function and c.status == "failed"]
    assert [c.kind for c in failed] == ["runtime"], [c.message for c in failed]
    assert "disagrees with the caller's memory" in failed[0].message
    others = [c for c in report.checks if c.function != function and c.status == "failed"
              and "zero_grad" not in c.message]  # SGD's and Adam's call the module's one
    assert not others, [c.message for c in others]
