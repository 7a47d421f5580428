"""Issue 26, weakness 5: a probe calls into torch after the submission's import only through
references it took before (grader/sandbox/probing.py PROBE_CAPTURES), so a submission that
rebinds a name in a namespace the tamper watch does not cover (torch.autograd, say) changes
nothing the probes do.

The attacks are lab autograd's (tests/hostile/test_attacks.py runs lab optim's): each is the unfixed
block (tests/submissions/autograd/fixed_block_is_buggy.py) with one line added that would pass
its `gradcheck` or its `backward`; the block must still lose those points (a replacement the
tamper watch sees fails the function, which gains nothing either).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
import types
from pathlib import Path

import pytest
import torch

import grader.labs
from grader.engine import CheckOptions, check_submission
from grader.models import Limits, Report
from grader.sandbox import Sandbox, probing, tamper
from tests.conftest import SharedSandboxes

ROOT = Path(__file__).resolve().parents[2]
UNFIXED = ROOT / "tests" / "submissions" / "autograd" / "fixed_block_is_buggy.py"
OPTIONS = CheckOptions(device="cpu", lang="en", limits=Limits(timeout_s=20))


def _hex(line: str) -> str:
    return f"exec(bytes.fromhex({line.encode().hex()!r}).decode())"


# (attack id, the line, the checks of fixed_block it would pass)
ATTACKS = [
    ("vars_gradcheck", 'vars(torch.autograd)["gradcheck"] = lambda *a, **k: True',
     ["fixed_block.gradcheck"]),
    ("setattr_gradcheck_hex", _hex('setattr(torch.autograd, "gradcheck", lambda *a, **k: True)'),
     ["fixed_block.gradcheck"]),
    ("vars_autograd_backward", 'vars(torch.autograd)["backward"] = lambda *a, **k: None',
     ["fixed_block.backward_runs"]),
    ("engine_run_backward_hex",
     _hex('vars(torch.autograd)["_engine_run_backward"] = lambda *a, **k: ()'),
     ["fixed_block.backward_runs"]),
    ("tensor_backward", "torch.Tensor.backward = lambda self, *a, **k: None",
     ["fixed_block.backward_runs"]),
    ("assert_close_hex",
     _hex('setattr(torch.testing, "assert_close", lambda *a, **k: None)'), []),
]


def _attack(tmp_path: Path, line: str) -> Path:
    source = UNFIXED.read_text()
    anchor = "\ndef buggy_block"
    assert anchor in source
    path = tmp_path / "autograd_inplace.py"
    path.write_text(source.replace(anchor, f"\n{line}\n\n{anchor}", 1))
    return path


@pytest.fixture(scope="module")
def sandbox(sandboxes: SharedSandboxes) -> Sandbox:
    return sandboxes("autograd")


@pytest.fixture(scope="module")
def unfixed(sandbox: Sandbox) -> Report:
    return check_submission(UNFIXED, lab="autograd", options=OPTIONS, sandbox=sandbox)


@pytest.mark.parametrize("name,line,would_pass", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_a_rebound_torch_name_earns_the_unfixed_block_nothing(
        tmp_path: Path, sandbox: Sandbox, unfixed: Report, name: str, line: str,
        would_pass: list[str]) -> None:
    report = check_submission(_attack(tmp_path, line), lab="autograd", options=OPTIONS,
                              sandbox=sandbox)
    passed = {c.id for c in report.checks if c.status == "passed"}
    honest = {c.id for c in unfixed.checks if c.status == "passed"}
    assert not set(would_pass) & honest  # the unfixed block fails them on its own
    gained = (passed - honest) & {c.id for c in report.checks if c.function == "fixed_block"}
    assert not gained, (name, sorted(gained))
    assert report.score <= unfixed.score, (report.score, unfixed.score)


# --- derived from the probes' code -----------------------------------------------------------

def _probe_modules() -> list[types.ModuleType]:
    """Every lab's probes, and the helpers of grader.labs they share (what the zygote imports
    before any submission)."""
    names = [f"grader.labs.{lab}.probes" for lab in sorted(grader.labs.LAB_FILES)]
    return [importlib.import_module(name) for name in [*names, "grader.sandbox.probing"]]


def _helpers() -> list[tuple[types.ModuleType, object]]:
    """What the probes import from grader.checks and grader.sandbox, with the functions and
    classes of the same module those call in turn, each with its module."""
    pending: list[tuple[types.ModuleType, str]] = []
    for module in _probe_modules():
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(
                    ("grader.checks", "grader.sandbox")):
                helper = importlib.import_module(node.module)
                pending.extend((helper, alias.name) for alias in node.names)
    seen: dict[tuple[str, str], tuple[types.ModuleType, object]] = {}
    while pending:
        module, name = pending.pop()
        value = vars(module).get(name)
        if (module.__name__, name) in seen or not isinstance(value, (types.FunctionType, type)):
            continue
        if getattr(value, "__module__", None) != module.__name__:
            continue
        seen[(module.__name__, name)] = (module, value)
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(value)))):
            if isinstance(node, ast.Name):
                pending.append((module, node.id))
    return list(seen.values())


def _chain(node: ast.AST) -> list[str] | None:
    """`torch.autograd.gradcheck` as ["torch", "autograd", "gradcheck"]; None if it is not a
    chain of names."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _call_time_nodes(tree: ast.Module) -> list[ast.AST]:
    """The nodes that run when a function runs (bodies, defaults excluded; annotations are
    strings under `from __future__ import annotations` and never run)."""
    nodes: list[ast.AST] = []
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            body = function.body if isinstance(function.body, list) else [function.body]
            for statement in body:
                nodes.extend(ast.walk(statement))
    return nodes


# Names of Python-level tensor methods that are also methods of builtin containers
# (`slot.index`, `text.split`): read as the container's.
_CONTAINER_METHODS = {name for kind in (list, tuple, dict, str, set, object) for name in dir(kind)}


def _lookups(module: types.ModuleType, code: object = None) -> set[tuple[str, str]]:
    """(namespace, name) of every lookup a function of `module` makes, when it runs, in a
    module of torch: `torch.autograd.gradcheck(...)` in a body is ("torch", "autograd") and
    ("torch.autograd", "gradcheck"). Torch's Python-level tensor methods count as lookups
    in the namespaces their own code reads (`x.backward()` reads torch.autograd)."""
    found: set[tuple[str, str]] = set()
    python_methods = {name for name, value in vars(torch.Tensor).items()
                      if isinstance(value, types.FunctionType)} - _CONTAINER_METHODS
    source = textwrap.dedent(inspect.getsource(module if code is None else code))
    tree = ast.parse(source)
    if code is not None and isinstance(code, type):  # a class: its methods' bodies
        tree = ast.Module(body=[n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)],
                          type_ignores=[])
    for node in _call_time_nodes(tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain = _chain(node)
        root = None if chain is None else vars(module).get(chain[0])
        if chain is not None and isinstance(root, types.ModuleType) and (
                root.__name__.split(".")[0] == "torch"):
            namespace, value = root.__name__, root
            for name in chain[1:]:
                found.add((namespace, name))
                value = getattr(value, name)
                if not isinstance(value, (types.ModuleType, type)):
                    break
                namespace = f"{namespace}.{name}"
        elif node.attr in python_methods:
            found.add(("torch.Tensor (Python method)", node.attr))
    return found


def _unwatched(modules: list[types.ModuleType],
               helpers: list[tuple[types.ModuleType, object]] = ()) -> set[tuple[str, str, str]]:
    watched = set(tamper.watched())
    pieces = [(module, None) for module in modules] + list(helpers)
    return {(module.__name__, namespace, name) for module, code in pieces
            for namespace, name in _lookups(module, code) if namespace not in watched}


def test_the_derivation_sees_what_the_old_probes_looked_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk finds the lookups issue 26 exploited, in code written as the probes were."""
    source = ("import torch\n\ndef probe(f, x, w):\n"
              "    torch.autograd.gradcheck(f, (x, w))\n    f(x).sum().backward()\n")
    module = types.ModuleType("old_probes")
    exec(compile(source, "old_probes", "exec"), vars(module))
    getsource = inspect.getsource
    monkeypatch.setattr(inspect, "getsource",
                        lambda obj: source if obj is module else getsource(obj))
    assert _unwatched([module]) == {
        ("old_probes", "torch.autograd", "gradcheck"),
        ("old_probes", "torch.Tensor (Python method)", "backward")}


def test_probes_look_up_torch_names_only_where_the_tamper_watch_looks() -> None:
    """Any other torch function a probe calls is one it took before the import
    (probing.PROBE_CAPTURES)."""
    assert _unwatched(_probe_modules()) == set()


def test_helpers_the_probes_call_add_no_unwatched_lookup() -> None:
    """The helpers the probes call (grader/checks, grader/sandbox) look up no torch name at
    probe time outside the tamper watch: the allocation meter's profiler is taken at import."""
    assert _unwatched([], _helpers()) == set()


def _resolve(dotted: str) -> object:
    parts = dotted.split(".")
    value: object = importlib.import_module(parts[0])
    for part in parts[1:]:
        value = getattr(value, part)
    return value


def test_each_capture_is_the_function_it_is_named_for() -> None:
    for name, captured in probing.PROBE_CAPTURES.items():
        assert _resolve(name) == captured, name


def test_every_torch_capture_of_probing_is_listed() -> None:
    """What probing.py takes from torch at import is listed in PROBE_CAPTURES, for the tamper
    watch."""
    listed = list(probing.PROBE_CAPTURES.values())
    tree = ast.parse(inspect.getsource(probing))
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        for value in values:
            chain = _chain(value)
            if chain is None or chain[0] not in ("torch", "contextvars"):
                continue
            assert any(_resolve(".".join(chain)) == item for item in listed), ".".join(chain)
