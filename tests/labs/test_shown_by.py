"""Points only for code shown to compute (issue 26): a write that changes nothing (`mul_(1)`,
`add_(0)`, `copy_` of a tensor onto itself, `x[...] = x`, a clamp with no finite bound)
advances the version counter, and the version checks the gates name must not take that for
work: each function earns exactly what the same function with the write removed earns."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import pytest
import torch

from grader.checks.core import computes
from grader.engine import CheckOptions, check_submission
from grader.labs import get_lab
from grader.sandbox import Sandbox
from tests.conftest import SharedSandboxes

# --- the rule ----------------------------------------------------------------------------------

_X = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("write", ["mul_(1)", "add_(0)", "copy_", "clamp_(-inf)"])
def test_a_write_that_changes_nothing_computes_nothing(write: str) -> None:
    after = _X.clone()
    if write == "mul_(1)":
        after.mul_(1)
    elif write == "add_(0)":
        after.add_(0)
    elif write == "copy_":
        after.copy_(after)
    else:
        after.clamp_(min=-math.inf)
    assert computes(_X, after, torch.relu(_X)) is False


def test_right_values_and_a_right_formula_with_the_wrong_sign_compute() -> None:
    grad = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    want = _X - 0.1 * grad
    assert computes(_X, want, want) is True
    assert computes(_X, _X + 0.1 * grad, want) is True  # one mistake: its values check's


def test_one_wrong_corner_still_computes() -> None:
    """relu_ by `x.mul_(x > 0)`: -inf * 0 is nan where relu gives 0, right everywhere else."""
    x = _X.clone()
    x.view(-1)[:2] = torch.tensor([-math.inf, math.inf])
    assert computes(x, x * (x > 0), torch.relu(x)) is True


def test_a_case_whose_reference_changes_nothing_cannot_tell() -> None:
    assert computes(_X.abs(), _X.abs(), torch.relu(_X.abs())) is None


# --- through `check`, per lab ------------------------------------------------------------------

TENSOR_OPS = '''
import torch

def relu_(x):
    {write}
    return x

def clamp_(x, lo=None, hi=None):
    if lo is None and hi is None:
        raise ValueError("clamp_: give at least one of lo and hi")
    {write}
    return x

def axpy_(y, alpha, x):
    {write_y}
    return y

def ema_update_(avg, new, decay):
    {write_avg}
    return avg

def normalize_(x, dim=-1, eps=1e-12):
    {write}
    return x

def standardize_(x, dim=-1, eps=1e-5):
    {write}
    return x

def softmax_(x, dim=-1):
    {write}
    return x
'''

OPTIM = '''
import torch

def zero_grad(params, set_to_none=False):
    for p in params:
        if p.grad is not None:
            {write_grad}

def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                {write}

class SGD:
    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, maximize=False):
        self.params, self.state = list(params), {{}}

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self):
        for p in self.params:
            if p.grad is not None:
                {write}

class Adam(SGD):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        self.params, self.state = list(params), {{}}
'''

AUTOGRAD = '''
import torch

def update_leaf_(leaf, delta):
    with torch.no_grad():
        {write_leaf}
    return leaf
'''

# Each no-op write, as `{t}` the tensor it writes into.
WRITES = {
    "mul_(1)": "{t}.mul_(1)",
    "add_(0)": "{t}.add_(0)",
    "copy_ onto itself": "{t}.copy_({t})",
    "x[...] = x": "{t}[...] = {t}",
    "clamp_(min=-inf)": "{t}.clamp_(min=float('-inf'))",
}
TENSORS = {"write": "x", "write_y": "y", "write_avg": "avg", "write_grad": "p.grad",
           "write_leaf": "leaf"}


def _source(template: str, write: str | None, *, sgd: bool = False) -> str:
    def line(t: str) -> str:
        return "pass" if write is None else write.format(t=t)

    names = {key: line(t) for key, t in TENSORS.items()}
    if sgd:
        names["write"] = line("p")
    return template.format(**names)


def _scores(path: Path, lab: str, sandbox: Sandbox) -> dict[str, float]:
    report = check_submission(path, lab=lab, options=CheckOptions(device="cpu"),
                              sandbox=sandbox)
    scores: dict[str, float] = defaultdict(float)
    for check in report.checks:
        scores[check.function] += check.score
    return dict(scores)


# The labs with a no-op template above, and the functions each template defines where not
# all of the lab's.
TEMPLATES = {"tensor_ops": TENSOR_OPS, "optim": OPTIM, "autograd": AUTOGRAD}
DEFINED = {"autograd": ("update_leaf_",)}


@pytest.mark.parametrize("lab", sorted(TEMPLATES))
@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_no_op_write_earns_what_pass_earns(lab: str, write: str, tmp_path: Path,
                                             sandboxes: SharedSandboxes) -> None:
    template, functions = TEMPLATES[lab], DEFINED.get(lab, get_lab(lab).functions)
    filename = get_lab(lab).filename
    sgd = lab == "optim"
    noop, empty = tmp_path / "noop" / filename, tmp_path / "empty" / filename
    for path, source in ((noop, _source(template, WRITES[write], sgd=sgd)),
                         (empty, _source(template, None, sgd=sgd))):
        path.parent.mkdir()
        path.write_text(source)
    sandbox = sandboxes(lab)
    got, want = _scores(noop, lab, sandbox), _scores(empty, lab, sandbox)
    assert all(want[f] > 0 for f in functions), want  # both imported: signatures earned
    assert {f: got[f] for f in functions} == {f: want[f] for f in functions}


def test_a_check_waiting_on_its_prerequisite_names_it(sandboxes: SharedSandboxes) -> None:
    """Issue 30: a passing check that counts once another passes says it waits, naming the
    checks it waits on (`waits_on`, in words in its message), and earns nothing yet."""
    from tests.conftest import ROOT

    path = ROOT / "tests" / "submissions" / "tensor_ops" / "relu_does_nothing.py"
    report = check_submission(path, lab="tensor_ops", options=CheckOptions(device="cpu"),
                              sandbox=sandboxes("tensor_ops"))
    waiting = [c for c in report.checks if c.waits_on]
    assert waiting, [c.id for c in report.checks if c.status == "failed"]
    ids = {check.id for check in get_lab("tensor_ops").checks}
    for check in waiting:
        assert check.status == "failed" and check.score == 0.0
        assert set(check.waits_on) <= ids and check.waits_on[0].startswith(check.function)
        assert check.message.startswith("waiting for “"), check.message
    assert all(not c.waits_on for c in report.checks if c.status == "failed"
               and not c.message.startswith("waiting for"))
