"""The outside witness: the caller's tensors live in a file the grading process reads itself."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from grader.engine import CheckOptions, check_submission
from grader.sandbox import runner
from grader.sandbox.witness import Arena, layout, read

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
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
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
    report = check_submission(path, lab="optim", options=CheckOptions(device="cpu"))
    sgd = [c for c in report.checks if c.function == "sgd_step" and c.status == "failed"]
    assert [c.kind for c in sgd] == ["runtime"], [c.message for c in sgd]
    assert "disagrees with the caller's memory" in sgd[0].message


def test_a_case_whose_witnessed_tensors_are_empty_needs_no_arena(tmp_path: Path) -> None:
    slots = layout([{"id": "empty"}], lambda case: [("float32", (0, 5))])
    Arena(str(tmp_path / "never.witness"), slots)  # nothing to map: no file is made
    memory = read(str(tmp_path / "never.witness"), slots)
    assert memory["empty"][0].shape == (0, 5)
