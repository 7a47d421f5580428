from __future__ import annotations

import pytest

from grader.checks.policy import static_uses

NAMES = ["zero_grad", "SGD"]


@pytest.mark.parametrize("source", [
    "import torch\nclass SGD(torch.optim.Optimizer):\n    pass\n",
    "from torch import optim\nclass SGD:\n    def step(self):\n        optim.SGD([], lr=1)\n",
    "import torch.optim as O\nclass SGD:\n    def step(self):\n        O.sgd.sgd\n",
    "from torch.optim import SGD as S\nclass SGD(S):\n    pass\n",
    "import torch\nclass SGD:\n    def step(self):\n        getattr(torch, 'optim')\n",
    "import importlib\nclass SGD:\n    def step(self):\n"
    "        importlib.import_module('torch.optim.sgd')\n",
    "import torch as T\ndef helper():\n    return T.optim\nclass SGD:\n"
    "    def step(self):\n        helper()\n",
])
def test_each_route_to_torch_optim_is_attributed_to_its_user(source: str) -> None:
    uses = static_uses(source, package="torch.optim", names=NAMES)
    assert uses["SGD"] and not uses["zero_grad"]


def test_docstrings_and_unrelated_names_are_not_uses() -> None:
    source = ('import torch\nclass SGD:\n    """Like `torch.optim.SGD`."""\n'
              "    def step(self):\n        self.optim = 1\n")
    assert static_uses(source, package="torch.optim", names=NAMES) == {"zero_grad": [], "SGD": []}


def test_defaults_are_compared_by_value() -> None:
    from grader.checks.api import same_default

    assert same_default("0", "0.0") and same_default("[0.9, 0.999]", "(0.9, 0.999)")
    assert same_default("1e-08", "1e-08") and same_default("False", "False")
    assert not same_default("True", "False") and not same_default("0.01", "0.001")
    assert not same_default(None, "0.0") and not same_default("'0.0'", "0.0")


@pytest.mark.parametrize("source", [
    "import torch\nO = torch.optim\nclass SGD:\n    def step(self):\n        O.SGD([], lr=1)\n",
    "import torch\nS = torch.optim.SGD\nK = S\nclass SGD:\n"
    "    def step(self):\n        K([], lr=1)\n",
    "import importlib\nO = importlib.import_module('torch.optim')\nclass SGD:\n"
    "    def step(self):\n        O.SGD\n",
])
def test_a_name_bound_to_torch_optim_by_assignment_is_a_route(source: str) -> None:
    uses = static_uses(source, package="torch.optim", names=NAMES)
    assert uses["SGD"] and not uses["zero_grad"]


@pytest.mark.parametrize("line", [
    "type(params).__module__.startswith('torch.optim')",
    "kw.get('optim')",
    "print('do not use torch.optim here')",
    "{'optim': 1}['optim']",
])
def test_a_string_that_only_names_torch_optim_is_not_a_use(line: str) -> None:
    source = f"import torch\nclass SGD:\n    def step(self, kw={{}}, params=()):\n        {line}\n"
    assert static_uses(source, package="torch.optim", names=NAMES) == {"zero_grad": [], "SGD": []}


def test_a_name_bound_in_a_test_block_or_another_function_does_not_spread() -> None:
    source = ("import torch\n\nclass SGD:\n    def step(self):\n        for p in []:\n"
              "            p.add_(1)\n\ndef zero_grad(params, set_to_none=False):\n"
              "    p = torch.optim.SGD([], lr=1)\n\n"
              "if __name__ == '__main__':\n    p = torch.optim.SGD([], lr=0.1)\n")
    uses = static_uses(source, package="torch.optim", names=NAMES)
    assert uses["zero_grad"] and not uses["SGD"]
