"""The grader graded by mutation (bench/mutation.py): every one-change mutant of a reference
solution is caught, or is listed in bench/equivalent_mutants.toml with the reason it behaves as
the solution does; each listed one still exists and still earns full marks."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from grader.sandbox import Sandbox
from tests.conftest import SharedSandboxes

ROOT = Path(__file__).resolve().parents[2]


def _load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_bench", ROOT / "bench" / "mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


mutation = _load_bench()
LABS = sorted(mutation.LABS)


@pytest.fixture(scope="module", params=LABS)
def lab_sandbox(request: pytest.FixtureRequest, sandboxes: SharedSandboxes
                ) -> Iterator[tuple[str, Sandbox, Path]]:
    with tempfile.TemporaryDirectory() as folder:
        yield request.param, sandboxes(request.param), Path(folder)


def test_the_solution_regions_are_the_lines_between_the_markers() -> None:
    source = "a = 1\n### BEGIN SOLUTION\nb = 2\nc = 3\n### END SOLUTION\nd = 4\n"
    assert mutation.solution_lines(source) == {3, 4}


@pytest.mark.parametrize("lab", LABS)
def test_mutants_change_only_solution_regions_and_are_distinct(lab: str) -> None:
    source = (ROOT / "solutions" / lab / mutation.LABS[lab]).read_text()
    allowed = mutation.solution_lines(source)
    made = mutation.mutants(lab)
    assert len(made) > 20, len(made)
    assert {m.operator for m in made} >= {"out_of_place", "remove_guard", "constant"}
    assert all(m.line in allowed for m in made)
    assert len({m.source for m in made}) == len({m.id for m in made}) == len(made)


@pytest.mark.parametrize("lab", LABS)
def test_every_listed_equivalent_is_still_made(lab: str) -> None:
    made = {m.id for m in mutation.mutants(lab)}
    listed = mutation.equivalents().get(lab, {})
    assert set(listed) <= made, sorted(set(listed) - made)
    assert all(reason.strip() for reason in listed.values())


def test_each_listed_equivalent_earns_full_marks(
        lab_sandbox: tuple[str, Sandbox, Path]) -> None:
    """An equivalent mutant that starts to lose points is no longer equivalent (the solution
    changed under it), or the grader became unfair to a correct program."""
    lab, sandbox, folder = lab_sandbox
    listed = mutation.equivalents().get(lab, {})
    for mutant in mutation.mutants(lab):
        if mutant.id in listed:
            score, full, failed = mutation.grade(mutant, sandbox, folder)
            assert score == full, (mutant.id, failed)


@pytest.mark.slow
def test_every_non_equivalent_mutant_is_caught(lab_sandbox: tuple[str, Sandbox, Path]) -> None:
    lab, sandbox, folder = lab_sandbox
    listed = mutation.equivalents().get(lab, {})
    survivors = []
    for mutant in mutation.mutants(lab):
        if mutant.id in listed:
            continue
        score, full, _ = mutation.grade(mutant, sandbox, folder)
        if score >= full:
            survivors.append(mutant.id)
    assert survivors == []


@pytest.mark.slow  # every optim mutant made
def test_a_mutant_is_graded_by_the_function_it_changes_and_its_callers() -> None:
    """The optimizers call the student's zero_grad: a mutant of zero_grad is graded by all
    three; one of sgd_step, which nothing calls, by sgd_step's checks alone."""
    source = (ROOT / "solutions" / "optim" / mutation.LABS["optim"]).read_text()
    by_holder: dict[str, set[tuple[str, ...]]] = {}
    for mutant in mutation.mutants("optim"):
        chosen = mutation.affected(mutant)
        assert chosen, mutant.id  # every solution region is inside a lab function
        holder = next(name for name in chosen if _defines(source, name, mutant.line))
        by_holder.setdefault(holder, set()).add(chosen)
    assert by_holder["zero_grad"] == {("Adam", "SGD", "zero_grad")}
    assert by_holder["sgd_step"] == {("sgd_step",)}
    assert by_holder["Adam"] == {("Adam",)}


def _defines(source: str, name: str, line: int) -> bool:
    """Whether `line` lies inside the top-level definition of `name`."""
    import ast

    return any(isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name
               and node.lineno <= line <= (node.end_lineno or node.lineno)
               for node in ast.parse(source).body)
