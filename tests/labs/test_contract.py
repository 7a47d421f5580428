"""Every lab meets the lab contract (grader/labs/contract.py, and the probes' part of it that the
sandbox calls, grader/sandbox/probes_contract.py): each member there, with the contract's
signature; a lab's functions listed once, in its plan; and the layers kept (the checks and the
sandbox import no lab). The labs are the discovered ones, never named here.

`contract_problems` is also run on a lab outside the package (tests/labs/test_adding_a_lab.py).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from grader.labs import LAB_FILES, get_lab, lab_folder
from grader.labs.contract import LabJudge, LabPackage, LabPlan
from grader.sandbox.probes_contract import PROBES_MEMBERS, LabProbes
from tests.conftest import ROOT
from tests.platforms.test_layout import imported

LABS = sorted(LAB_FILES)


def _members(protocol: type) -> list[str]:
    """A Protocol's members, as declared: its attributes, then its methods."""
    methods = [name for name, value in vars(protocol).items()
               if inspect.isfunction(value) and not name.startswith("_")]
    return [*typing.get_type_hints(protocol), *methods]


def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    """`function`'s annotations resolved; the contract's names only a type checker imports
    (the sandbox's Arena, OutsideMeter, Spec: torch) are resolved here."""
    from grader.sandbox.outside_meter import OutsideMeter
    from grader.sandbox.witness import Arena, Spec

    hints = typing.get_type_hints(function, localns={"Arena": Arena, "OutsideMeter": OutsideMeter,
                                                     "Spec": Spec})
    hints.pop("self", None)
    return hints


def signature_problems(where: str, implemented: Any, declared: Callable[..., Any]) -> list[str]:
    """Where a module's function differs from the Protocol method it implements (`self`
    aside): parameter names, kinds and which have defaults, then resolved annotations."""
    if not callable(implemented):
        return [f"{where} is not a function"]
    want = inspect.signature(declared)
    want = want.replace(parameters=list(want.parameters.values())[1:])
    got = inspect.signature(implemented)

    def shape(signature: inspect.Signature) -> list[tuple[str, Any, bool]]:
        return [(p.name, p.kind, p.default is not inspect.Parameter.empty)
                for p in signature.parameters.values()]

    if shape(got) != shape(want):
        return [f"{where}{got}: the contract says {where}{want}"]
    got_hints, want_hints = _hints(implemented), _hints(declared)
    return [f"{where}: {name} is {got_hints.get(name)}, the contract says {hint}"
            for name, hint in want_hints.items() if got_hints.get(name) != hint]


def module_problems(module: ModuleType, protocol: type) -> list[str]:
    """What `module` lacks of `protocol`, or states with another signature or type."""
    where = module.__name__
    problems = [f"{where} lacks {name}" for name in _members(protocol)
                if not hasattr(module, name)]
    if problems:
        return problems
    for name, hint in typing.get_type_hints(protocol).items():
        value = getattr(module, name)
        if hint == tuple[str, ...]:
            fits = isinstance(value, tuple) and all(isinstance(v, str) for v in value)
        else:
            fits = isinstance(value, hint)
        if not fits:
            problems.append(f"{where}.{name} is {value!r}, not a {hint}")
    for name in _members(protocol):
        declared = vars(protocol).get(name)
        if inspect.isfunction(declared):
            problems += signature_problems(f"{where}.{name}", getattr(module, name), declared)
    return problems


def contract_problems(lab: str) -> list[str]:
    """Everything lab `lab` states otherwise than the contract; [] where it meets it."""
    package = importlib.import_module(f"grader.labs.{lab}")
    plan = importlib.import_module(f"grader.labs.{lab}.plan")
    probes = importlib.import_module(f"grader.labs.{lab}.probes")
    judge = importlib.import_module(f"grader.labs.{lab}.judge")
    problems = [*module_problems(package, LabPackage), *module_problems(plan, LabPlan),
                *module_problems(probes, LabProbes), *module_problems(judge, LabJudge)]
    if problems:
        return problems
    assert isinstance(package, LabPackage) and isinstance(plan, LabPlan)
    assert isinstance(probes, LabProbes) and isinstance(judge, LabJudge)
    functions, lab_obj = plan.FUNCTIONS, judge.LAB
    if not functions or len(set(functions)) != len(functions):
        problems.append(f"{lab}: plan.FUNCTIONS {functions!r} is empty or repeats a name")
    if probes.FUNCTIONS is not functions:
        problems.append(f"{lab}: probes.FUNCTIONS is not plan.FUNCTIONS (import it from there)")
    if lab_obj.functions is not functions:
        problems.append(f"{lab}: LAB.functions is not plan.FUNCTIONS (import it from there)")
    stated = (lab_obj.name, lab_obj.filename, lab_obj.rubric().lab)
    if stated != (lab, package.FILENAME, lab):
        problems.append(f"{lab}: LAB's name, filename and rubric's lab are {stated}, not "
                        f"{(lab, package.FILENAME, lab)}")
    signatures = getattr(plan, "SIGNATURES", None)
    if signatures is not None and list(signatures) != list(functions):
        problems.append(f"{lab}: plan.SIGNATURES is keyed {list(signatures)}, not by FUNCTIONS")
    for function in functions:
        ids = [case["id"] for case in plan.lab_cases(function)]
        if not ids or len(set(ids)) != len(ids):
            problems.append(f"{lab}: {function} has no cases, or two with one id: {ids}")
        if not lab_obj.checks_for(function):
            problems.append(f"{lab}: no check of {function}")
    problems += [f"{lab}: check {c.id} is of no function in FUNCTIONS"
                 for c in lab_obj.checks if c.function not in functions]
    return problems + restatements(lab_folder(lab), functions)


def restatements(folder: Path, functions: tuple[str, ...]) -> list[str]:
    """Every list, tuple or set of string literals, in any module of the lab, that names its
    functions again (all of them, and nothing else): what plan.FUNCTIONS alone states."""
    found = []
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        source = [node.value for node in ast.walk(tree) if path.name == "plan.py"
                  and isinstance(node, ast.Assign)
                  and [ast.unparse(t) for t in node.targets] == ["FUNCTIONS"]]
        for node in ast.walk(tree):
            if not isinstance(node, (ast.List, ast.Tuple, ast.Set)) or node in source:
                continue
            names = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if len(names) == len(node.elts) == len(functions) and set(names) == set(functions):
                found.append(f"{path.name}:{node.lineno} lists the lab's functions again "
                             f"(use plan.FUNCTIONS)")
    return found


@pytest.mark.parametrize("lab", LABS)
def test_each_lab_meets_the_contract_and_lists_its_functions_once(lab: str) -> None:
    assert contract_problems(lab) == []
    assert get_lab(lab).functions == importlib.import_module(f"grader.labs.{lab}.plan").FUNCTIONS


def test_the_contract_names_what_the_sandbox_calls() -> None:
    """`PROBES_MEMBERS` is the Protocol's members, and the zygote and the child reach the
    probes module through those alone."""
    assert list(PROBES_MEMBERS) == _members(LabProbes)
    called = set()
    for name in ("zygote.py", "child.py"):
        for node in ast.walk(ast.parse((ROOT / "grader" / "sandbox" / name).read_text())):
            if isinstance(node, ast.Attribute) and (
                    ast.unparse(node.value) == "lab_probes"
                    or ast.unparse(node.value).startswith("import_probes(")):
                called.add(node.attr)
    assert called and called <= set(PROBES_MEMBERS), called


def test_the_check_finds_a_missing_member_and_a_wrong_signature() -> None:
    probes = importlib.import_module(f"grader.labs.{LABS[0]}.probes")
    lacking = ModuleType("lacking")
    vars(lacking).update({name: getattr(probes, name) for name in PROBES_MEMBERS[:-1]})
    assert module_problems(lacking, LabProbes) == [f"lacking lacks {PROBES_MEMBERS[-1]}"]

    def probe(module: ModuleType, function: str, device: str,
              cases: list[dict[str, Any]]) -> dict[str, Any]:
        return {}

    def witnessed(function: str, case: dict[str, Any]) -> list[str]:
        return []

    wrong = ModuleType("wrong")
    vars(wrong).update({name: getattr(probes, name) for name in PROBES_MEMBERS})
    vars(wrong).update(probe=probe, witnessed=witnessed, FUNCTIONS=["a"])
    found = module_problems(wrong, LabProbes)
    assert [line.split(" ")[0].split("(")[0].rstrip(":") for line in found] == [
        "wrong.FUNCTIONS", "wrong.witnessed", "wrong.probe"], found


def test_a_second_list_of_the_functions_is_found(tmp_path: Path) -> None:
    (tmp_path / "plan.py").write_text('FUNCTIONS = ("a_", "b_")\nREDUCTIONS = ("b_",)\n')
    (tmp_path / "probes.py").write_text('NAMES = ["b_", "a_"]\n')
    assert restatements(tmp_path, ("a_", "b_")) == [
        "probes.py:1 lists the lab's functions again (use plan.FUNCTIONS)"]


def test_the_checks_and_the_sandbox_import_no_lab() -> None:
    """The layers: checks < sandbox < labs. The sandbox reaches a lab's probes by computed
    name only (probes_contract.import_probes)."""
    for layer in ("checks", "sandbox"):
        for path in (ROOT / "grader" / layer).glob("*.py"):
            labs = {m for m in imported(path) if m == "grader.labs" or
                    m.startswith("grader.labs.")}
            assert not labs, f"{path.relative_to(ROOT)} imports {sorted(labs)}"

