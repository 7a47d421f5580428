"""The static integrity scan: silent on correct code, names each route tampering needs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from grader.checks.integrity import integrity_uses
from grader.engine import CheckOptions, check_submission
from grader.models import Limits
from tests.conftest import SharedSandboxes

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["zero_grad", "sgd_step", "relu_", "update_leaf_"]


def correct_files() -> list[Path]:
    known = [p for p in sorted((ROOT / "tests" / "submissions").glob("*/*.py"))
             if not tomllib.loads(p.with_suffix(".toml").read_text())["fails"]]
    return known + sorted((ROOT / "solutions").glob("*/*.py"))


@pytest.mark.parametrize("path", correct_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_correct_code_is_never_flagged(path: Path) -> None:
    found = integrity_uses(path.read_text(), names=NAMES)
    assert not found.anywhere and not found.module and not any(found.by_name.values()), found


@pytest.mark.parametrize(("line", "category"), [
    ("sys._getframe(1).f_locals", "frame introspection"),
    ("inspect.currentframe()", "frame introspection"),
    ("gc.get_objects()", "object walking"),
    ("sys.setprofile(None)", "profiling or tracing hook"),
    ("torch._C._autograd._unsafe_set_version_counter(x, 3)", "torch internals"),
    ("torch._C._len_torch_dispatch_stack()", "detecting the grader's meters"),
    ("torch.autograd.profiler._is_profiler_enabled", "detecting the grader's meters"),
    ("torch.frombuffer(buf, dtype=torch.float32)", "raw memory"),
    ("os.write(3, b'x')", "raw descriptor writes"),
    ("torch.optim.SGD.step.__wrapped__", "unwrapping or rewriting functions"),
    ("importlib.reload(torch)", "reloading modules"),
    ("open('/proc/self/mem')", "reading /proc"),
    ("json.dumps = print", "patching a library"),
    ("sys.modules['grader.sandbox.child']", "the grader's own modules"),
])
def test_each_route_is_named_and_attributed(line: str, category: str) -> None:
    source = ("import gc, importlib, inspect, json, os, sys\nimport torch\n\n"
              f"def zero_grad(params, set_to_none=False, x=None, buf=None):\n    {line}\n")
    found = integrity_uses(source, names=NAMES)
    assert found.by_name["zero_grad"] and category in found.by_name["zero_grad"][0]
    assert not found.by_name["sgd_step"] and not found.module


@pytest.mark.parametrize("source", ["import ctypes\n", "import mmap\n", "import grader\n",
                                    "from torch.overrides import TorchFunctionMode\n"])
def test_module_level_findings_reach_every_function(source: str) -> None:
    assert integrity_uses(source, names=NAMES).module


SNEAKY = '''
import torch

def _active():
    return torch._C._len_torch_dispatch_stack() > 0

def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is None:
                continue
            if _active():  # measured: behave
                p.add_(p.grad, alpha=-lr)
            else:  # not measured: a full-size temporary
                p.copy_(p - lr * p.grad)
'''


def test_flag_keeps_the_points_and_tells_the_instructor_fail_takes_them(
        tmp_path: Path, sandboxes: SharedSandboxes) -> None:
    path = tmp_path / "optimizer.py"
    path.write_text(SNEAKY)
    limits = Limits(timeout_s=20)
    flagged = check_submission(path, lab="optim", sandbox=sandboxes("optim"),
                               options=CheckOptions(device="cpu", limits=limits))
    assert flagged.integrity and "detecting the grader's meters" in flagged.integrity[0]
    failed = check_submission(path, lab="optim", sandbox=sandboxes("optim"),
                              options=CheckOptions(device="cpu", limits=limits, integrity="fail"))
    sgd = [c for c in failed.checks if c.function == "sgd_step" and c.status != "skipped"]
    assert [c.kind for c in sgd] == ["runtime"] and sgd[0].score == 0
    assert "meters" in sgd[0].message


def test_a_main_guard_and_sys_settings_are_not_findings_for_the_functions() -> None:
    source = ("import sys\n\ndef sgd_step(params, lr):\n    pass\n\n"
              "if __name__ == '__main__':\n    import tracemalloc\n    tracemalloc.start()\n"
              "    print(open('/proc/self/status').read())\n\nsys.argv = ['']\n")
    found = integrity_uses(source, names=NAMES)
    assert not found.module and not any(found.by_name.values())
    assert found.anywhere  # still listed for the instructor: the scan saw them


def test_a_computed_name_on_torch_is_a_finding() -> None:
    source = "import torch\n\ndef sgd_step(params, lr):\n    getattr(torch, 'op' + 'tim')\n"
    assert "computed name" in integrity_uses(source, names=NAMES).by_name["sgd_step"][0]
