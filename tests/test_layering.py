"""The package's imports run one way: down the layers below, never in a circle.

Read from the source (every import statement, those inside functions too; those only for type
checkers excepted), so a lazy import cannot hide an arrow up.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "grader"

# Bottom to top: a module may import its own layer's modules and those of the layers below.
LAYERS: list[set[str]] = [
    {"grader", "grader.errors", "grader.models", "grader.student_files",
     "grader.notebook_cells", "grader.layouts", "grader.roster", "grader.stubs",
     "grader.distribution"},  # what the builders build from: solutions, the wheel
    {"grader.checks"},  # judging helpers: tensors, numerics, findings, source scans
    {"grader.feedback"},  # the catalogs: words for findings
    {"grader.sandbox"},  # running student code: zygote, children, audit, the probes' toolkit
    {"grader.labs"},  # each lab's plan, inputs, probes (over the sandbox) and judges
    {"grader.submission", "grader.import_failure", "grader.hidden", "grader.quick_answers"},
    {"grader.summary", "grader.views", "grader.render", "grader.explain"},
    {"grader.engine"},  # one submission: observe, judge, score, word
    {"grader.watch"},  # one submission again at each save (check --watch)
    {"grader.exporters", "grader.formats"},
    {"grader.grades"},  # the grades folder: reports, feedback files, class files
    {"grader.batch"},  # a class: the run over its executors (local, cluster)
    {"grader.platforms"},  # one folder per platform
    {"grader.notebook", "grader.cli", "grader.__main__"},  # front ends
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if _type_checking_only(node):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _imports(node)


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The package's modules `path` imports (a name imported from a package that is one of
    its modules counts as that module)."""
    found = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in known}
        elif node.module and node.level == 0 and node.module in known:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & known
            found |= submodules or {node.module}
            if len(submodules) < len(node.names):
                found.add(node.module)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(path, set(known)) - {name} for name, path in known.items()}


def layer_of(module: str) -> int:
    """The layer of the deepest group naming `module` (grader.checks.tensors: grader.checks)."""
    for prefix in (module.rsplit(".", depth)[0] for depth in range(module.count(".") + 1)):
        for index, layer in enumerate(LAYERS):
            if prefix in layer:
                return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def test_every_module_has_a_layer() -> None:
    for module in modules():
        layer_of(module)


def test_no_import_runs_up_a_layer() -> None:
    upward = [f"{module} (layer {layer_of(module)}) imports {target} "
              f"(layer {layer_of(target)})"
              for module, targets in graph().items() for target in sorted(targets)
              if layer_of(target) > layer_of(module)]
    assert upward == []


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_circle_of_imports() -> None:
    assert cycles(graph()) == []


def test_no_platform_imports_another() -> None:
    for module, targets in graph().items():
        if module.startswith("grader.platforms."):
            own = ".".join(module.split(".")[:3])
            others = {t for t in targets if t.startswith("grader.platforms.")
                      and not t.startswith(own)}
            assert others == set(), module


@pytest.mark.parametrize(("edges", "expected"), [
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": set()}, []),
])
def test_the_cycle_finder_finds_circles(edges: dict[str, set[str]],
                                        expected: list[list[str]]) -> None:
    assert cycles(edges) == expected


def test_the_reader_sees_lazy_imports_and_skips_type_checking_ones(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from grader import cli\n"
                      "def f():\n    from grader.batch import grade_class\n")
    assert imports_of(source, {"grader.cli", "grader.batch"}) == {"grader.batch"}


def test_judging_and_scoring_never_word() -> None:
    """Words come once, at the end: only engine/wording.py (and the report's assembly above
    it) reads the catalogs; checks, labs, the sandbox and scoring produce findings and points."""
    wording = {"grader.engine.wording", "grader.engine.api", "grader.engine"}
    speakers = {module for module, targets in graph().items() if "grader.feedback" in targets
                and module.startswith(("grader.checks", "grader.labs", "grader.sandbox",
                                       "grader.engine"))}
    assert speakers <= wording, speakers - wording


# Suites that grade the product from outside any one module: the known submissions (and the
# example class, the mutants of the solutions, the CUDA comparison), and the attacks.
WHOLE_PRODUCT = {"known", "hostile"}


def test_every_test_file_sits_in_the_folder_mirroring_its_module() -> None:
    """tests/<folder>/ for grader/<folder>/ (a package), tests/test_<module>*.py for a module
    grader/<module>.py; the whole-product suites in their own folders."""
    tests = Path(__file__).parent
    misplaced = []
    for path in sorted(tests.rglob("test_*.py")):
        folder = path.parent.relative_to(tests).parts
        if folder and folder[0] in WHOLE_PRODUCT:
            continue
        if folder:
            if not (PACKAGE.joinpath(*folder) / "__init__.py").is_file():
                misplaced.append(str(path.relative_to(tests)))
        elif path.stem != "test_layering" and not any(
                path.stem == f"test_{module.stem}" or path.stem.startswith(f"test_{module.stem}_")
                for module in PACKAGE.glob("*.py")):
            misplaced.append(path.name)
    assert misplaced == []
