"""Mutation testing of the grader: one-change mutants of each lab's reference solution, each
graded with `check`, and how many the grader catches.

A mutant changes one place inside a solution region (between `### BEGIN SOLUTION` and
`### END SOLUTION`) by one of the operators below, chosen for the mistakes this course is
about: in place made out of place and back, writes detoured through `.data`, history kept or
dropped (`no_grad` removed), guards removed or turned, constants and operators changed, a new
tensor returned, an exception type changed, a copy turned into an alias, a statement deleted,
arguments swapped, a boolean operator turned. A mutant is graded by the checks of the
functions it can change (`affected`), and is *caught* when its report fails at least one;
one that earns full marks *survives*. A survivor is either a gap in the grader or an
*equivalent* mutant (it behaves as the solution does wherever the lab's contract says
anything): those are listed, each with its reason, in bench/equivalent_mutants.toml, and
tests/known/test_mutation.py holds every listed one to full marks.

Prints, per lab and per operator, caught / total and caught / non-equivalent, then every
survivor that is not listed as equivalent. Usage:
    python bench/mutation.py [--lab optim] [--list] [--limit N]
"""

from __future__ import annotations

import argparse
import ast
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's grader
from grader.labs import LAB_FILES  # noqa: E402 - after the path above (no torch)

EQUIVALENTS = Path(__file__).with_name("equivalent_mutants.toml")
LABS = LAB_FILES  # each lab's solution file name, by lab: every lab grader.labs finds

# Tensor methods that have an in-place twin (`add` / `add_`), for the in-place operators.
TWINNED = frozenset({
    "add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "pow", "clamp", "clamp_min",
    "clamp_max", "relu", "sigmoid", "addcdiv", "addcmul", "lerp", "copy", "zero", "fill",
    "masked_fill", "abs", "reciprocal", "sign", "floor", "ceil", "square", "rsqrt",
})
BINOPS: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div,
                            ast.Div: ast.Mult, ast.Pow: ast.Mult}
COMPARISONS: dict[type, type] = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE,
                                 ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
                                 ast.Is: ast.IsNot, ast.IsNot: ast.Is}
EXCEPTIONS = {"RuntimeError": "Exception", "ValueError": "RuntimeError",
              "Exception": "RuntimeError", "TypeError": "ValueError"}


@dataclass(frozen=True)
class Mutant:
    lab: str
    operator: str
    line: int
    detail: str
    source: str

    @property
    def id(self) -> str:
        """Stable while the solution's lines stay where they are: `operator@line:detail`."""
        return f"{self.operator}@{self.line}:{self.detail}"


# --- where mutants may go ------------------------------------------------------------------

def solution_lines(source: str) -> set[int]:
    """The line numbers inside solution regions."""
    inside, lines = False, set()
    for number, line in enumerate(source.splitlines(), start=1):
        marker = line.strip()
        if marker == "### BEGIN SOLUTION":
            inside = True
        elif marker == "### END SOLUTION":
            inside = False
        elif inside:
            lines.add(number)
    return lines


# --- operators: each yields (line, detail, apply) for every place it can change ------------

Change = tuple[int, str, Callable[[], None]]


def _method_calls(tree: ast.AST) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            yield node


def _statements(tree: ast.AST) -> Iterator[tuple[list[ast.stmt], int, ast.stmt]]:
    """(the body it is in, its index, the statement) for every statement of `tree`."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list):
                for index, statement in enumerate(body):
                    if isinstance(statement, ast.stmt):
                        yield body, index, statement


def op_out_of_place(tree: ast.AST) -> Iterator[Change]:
    """`x.add_(...)` -> `x.add(...)`: the in-place write made out of place."""
    for call in _method_calls(tree):
        func = call.func
        assert isinstance(func, ast.Attribute)
        name = func.attr
        if name.endswith("_") and not name.endswith("__") and name[:-1] in TWINNED:
            yield call.lineno, f"{name}->{name[:-1]}", _set_attr(func, name[:-1])


def op_in_place(tree: ast.AST) -> Iterator[Change]:
    """`x.add(...)` -> `x.add_(...)`: an out-of-place op made in place (on what it read)."""
    for call in _method_calls(tree):
        func = call.func
        assert isinstance(func, ast.Attribute)
        module = isinstance(func.value, ast.Name) and func.value.id in ("torch", "F")
        if func.attr in TWINNED and not module:
            yield call.lineno, f"{func.attr}->{func.attr}_", _set_attr(func, func.attr + "_")


def op_data_detour(tree: ast.AST) -> Iterator[Change]:
    """`x.add_(...)` -> `x.data.add_(...)`: a write autograd cannot see."""
    for call in _method_calls(tree):
        func = call.func
        assert isinstance(func, ast.Attribute)
        if func.attr.endswith("_") and not func.attr.endswith("__") and not (
                isinstance(func.value, ast.Attribute) and func.value.attr == "data"):
            def apply(func: ast.Attribute = func) -> None:
                func.value = ast.Attribute(value=func.value, attr="data", ctx=ast.Load())
            yield call.lineno, f".data.{func.attr}", apply


def op_drop_no_grad(tree: ast.AST) -> Iterator[Change]:
    """`with torch.no_grad(): body` -> `body`, and `@torch.no_grad()` removed."""
    for body, index, statement in _statements(tree):
        if isinstance(statement, ast.With) and "no_grad" in ast.unparse(
                statement.items[0].context_expr):
            def apply(body: list = body, index: int = index,
                      statement: ast.With = statement) -> None:
                body[index:index + 1] = statement.body
            yield statement.lineno, "without no_grad", apply
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for index, decorator in enumerate(node.decorator_list):
                if "no_grad" in ast.unparse(decorator):
                    def drop(node: ast.FunctionDef = node, index: int = index) -> None:
                        del node.decorator_list[index]
                    yield node.lineno, "@no_grad removed", drop


def op_remove_guard(tree: ast.AST) -> Iterator[Change]:
    """An `if` whose body only skips, returns or raises, removed; any other `if` made to
    take the other branch (its test negated)."""
    for body, index, statement in _statements(tree):
        if not isinstance(statement, ast.If):
            continue
        skips = all(isinstance(s, (ast.Continue, ast.Return, ast.Raise, ast.Break))
                    for s in statement.body)
        if skips and not statement.orelse:
            def apply(body: list = body, index: int = index) -> None:
                del body[index]
            yield statement.lineno, "guard removed", apply
        else:
            def negate(statement: ast.If = statement) -> None:
                statement.test = ast.UnaryOp(op=ast.Not(), operand=statement.test)
            yield statement.lineno, "branch negated", negate


def op_compare(tree: ast.AST) -> Iterator[Change]:
    """`==` <-> `!=`, `<` <-> `<=`, `is` <-> `is not`; a constant compared against moved
    (`!= 0` -> `!= 1`)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for index, op in enumerate(node.ops):
            if type(op) in COMPARISONS:
                def apply(node: ast.Compare = node, index: int = index) -> None:
                    node.ops[index] = COMPARISONS[type(node.ops[index])]()
                yield node.lineno, f"{type(op).__name__}->{COMPARISONS[type(op)].__name__}", apply
        for right in node.comparators:
            if isinstance(right, ast.Constant) and isinstance(right.value, (int, float)) \
                    and not isinstance(right.value, bool):
                def move(right: ast.Constant = right) -> None:
                    right.value = 1 if right.value == 0 else 0
                yield node.lineno, f"compared with {1 if right.value == 0 else 0}", move


def op_constant(tree: ast.AST) -> Iterator[Change]:
    """A number changed: 0 <-> 1, any other `c` -> `c + 1`; True <-> False."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            value = node.value
            new = (not value) if isinstance(value, bool) else (
                1 if value == 0 else 0 if value == 1 else value + 1)

            def apply(node: ast.Constant = node, new: object = new) -> None:
                node.value = new
            yield node.lineno, f"{value!r}->{new!r}", apply


def op_binop(tree: ast.AST) -> Iterator[Change]:
    """`+` <-> `-`, `*` <-> `/`, `**` -> `*`; a unary minus dropped."""
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in BINOPS:
            def apply(node: ast.BinOp = node) -> None:
                node.op = BINOPS[type(node.op)]()
            yield node.lineno, f"{type(node.op).__name__}->{BINOPS[type(node.op)].__name__}", apply
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            def plus(node: ast.UnaryOp = node) -> None:
                node.op = ast.UAdd()
            yield node.lineno, "unary minus dropped", plus


def op_keyword(tree: ast.AST) -> Iterator[Change]:
    """A keyword argument dropped (`alpha=`, `keepdim=`, `dim=`, `value=`, ...)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for index, keyword in enumerate(node.keywords):
                if keyword.arg is None:
                    continue

                def apply(node: ast.Call = node, index: int = index) -> None:
                    del node.keywords[index]
                yield node.lineno, f"{keyword.arg}= dropped", apply


def op_return_new(tree: ast.AST) -> Iterator[Change]:
    """`return x` -> `return x.clone()`; `return t, flag` keeps its shape."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Return) and isinstance(node.value, (ast.Name, ast.Call,
                                                                     ast.Attribute)):
            def apply(node: ast.Return = node) -> None:
                assert node.value is not None
                node.value = ast.Call(func=ast.Attribute(value=node.value, attr="clone",
                                                         ctx=ast.Load()), args=[], keywords=[])
            yield node.lineno, "returns a clone", apply


def op_alias(tree: ast.AST) -> Iterator[Change]:
    """`torch.clone(x)` / `x.clone()` / `x.detach()` -> `x`: a copy made an alias."""
    for node in ast.walk(tree):
        for field, value in ast.iter_fields(node):
            values = value if isinstance(value, list) else [value]
            for index, child in enumerate(values):
                if not (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)):
                    continue
                name = child.func.attr
                if name == "clone" and isinstance(child.func.value, ast.Name) \
                        and child.func.value.id == "torch" and child.args:
                    inner = child.args[0]
                elif name in ("clone", "detach") and not child.args:
                    inner = child.func.value
                else:
                    continue

                def apply(node: ast.AST = node, field: str = field, index: int = index,
                          inner: ast.expr = inner, many: bool = isinstance(value, list)
                          ) -> None:
                    if many:
                        getattr(node, field)[index] = inner
                    else:
                        setattr(node, field, inner)
                yield child.lineno, f"{name}() dropped", apply


def op_exception(tree: ast.AST) -> Iterator[Change]:
    """The type an `except` catches or a `raise` raises, changed."""
    for node in ast.walk(tree):
        target = None
        if isinstance(node, ast.ExceptHandler) and isinstance(node.type, ast.Name):
            target = node.type
        elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) \
                and isinstance(node.exc.func, ast.Name):
            target = node.exc.func
        if target is not None and target.id in EXCEPTIONS:
            def apply(target: ast.Name = target) -> None:
                target.id = EXCEPTIONS[target.id]
            yield node.lineno, f"{target.id}->{EXCEPTIONS[target.id]}", apply


def op_logic(tree: ast.AST) -> Iterator[Change]:
    """`and` <-> `or`; a `not` dropped."""
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp):
            def apply(node: ast.BoolOp = node) -> None:
                node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            yield node.lineno, type(node.op).__name__.lower() + " swapped", apply
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
                def drop(node: ast.AST = node, field: str = field,
                         value: ast.UnaryOp = value) -> None:
                    setattr(node, field, value.operand)
                yield value.lineno, "not dropped", drop


def op_swap_arguments(tree: ast.AST) -> Iterator[Change]:
    """The first two positional arguments of a call swapped (`lerp_(grad, w)`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and len(node.args) >= 2 and not any(
                isinstance(arg, ast.Starred) for arg in node.args[:2]):
            def apply(node: ast.Call = node) -> None:
                node.args[0], node.args[1] = node.args[1], node.args[0]
            yield node.lineno, "arguments swapped", apply


def op_remove_statement(tree: ast.AST) -> Iterator[Change]:
    """A statement that computes or stores something deleted (`state["step"] += 1`, an
    in-place write on its own line, an assignment); `pass` where the body would be empty."""
    for body, index, statement in _statements(tree):
        if not isinstance(statement, (ast.Expr, ast.Assign, ast.AugAssign)) or (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)):  # a docstring
            continue

        def apply(body: list = body, index: int = index) -> None:
            body[index] = ast.Pass()
        yield statement.lineno, "statement removed", apply


OPERATORS: dict[str, Callable[[ast.AST], Iterator[Change]]] = {
    "out_of_place": op_out_of_place, "in_place": op_in_place, "data_detour": op_data_detour,
    "drop_no_grad": op_drop_no_grad, "remove_guard": op_remove_guard, "compare": op_compare,
    "constant": op_constant, "binop": op_binop, "keyword": op_keyword,
    "return_new": op_return_new, "alias": op_alias, "exception": op_exception,
    "remove_statement": op_remove_statement, "logic": op_logic,
    "swap_arguments": op_swap_arguments,
}


def _set_attr(func: ast.Attribute, name: str) -> Callable[[], None]:
    def apply() -> None:
        func.attr = name
    return apply


# --- making and grading mutants ------------------------------------------------------------

def mutants(lab: str) -> list[Mutant]:
    """Every one-change mutant of `lab`'s solution, in a fixed order. Two changes that give
    the same program are one mutant."""
    path = ROOT / "solutions" / lab / LABS[lab]
    source = path.read_text()
    allowed = solution_lines(source)
    original = ast.unparse(ast.parse(source))
    made: dict[str, Mutant] = {}
    ids: Counter[str] = Counter()
    for name, operator in OPERATORS.items():
        count = sum(1 for line, _, _ in operator(ast.parse(source)) if line in allowed)
        for index in range(count):
            tree = ast.parse(source)
            changes = [c for c in operator(tree) if c[0] in allowed]
            line, detail, apply = changes[index]
            apply()
            ast.fix_missing_locations(tree)
            text = ast.unparse(tree)
            if text != original and text not in made:
                ids[f"{name}@{line}:{detail}"] += 1
                repeat = ids[f"{name}@{line}:{detail}"]  # the same change twice on one line
                made[text] = Mutant(lab, name, line, detail if repeat == 1 else
                                    f"{detail}#{repeat}", text)
    return list(made.values())


def equivalents() -> dict[str, dict[str, str]]:
    """The reviewed equivalent mutants: lab -> {mutant id: reason}."""
    with EQUIVALENTS.open("rb") as handle:
        return {lab: dict(entries) for lab, entries in tomllib.load(handle).items()}


def affected(mutant: Mutant) -> tuple[str, ...]:
    """The lab functions a mutant can change: the one whose definition holds the changed line
    and every lab function whose code names it (SGD calls zero_grad); () for all of them where
    the line is outside any lab function (a helper every function may call). The others run
    the solution's own code, so grading them could only pass."""
    from grader.labs import lab_functions

    names = lab_functions(mutant.lab)
    tree = ast.parse((ROOT / "solutions" / mutant.lab / LABS[mutant.lab]).read_text())
    tops = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    holder = next((node for node in tops
                   if node.lineno <= mutant.line <= (node.end_lineno or node.lineno)), None)
    if holder is None or holder.name not in names:
        return ()
    callers = {node.name for node in tops if node.name in names and any(
        isinstance(inner, ast.Name) and inner.id == holder.name for inner in ast.walk(node))}
    return tuple(sorted({holder.name} | callers))


def grade(mutant: Mutant, sandbox: object, folder: Path) -> tuple[float, float, list[str]]:
    """(score, max score, ids of the failed checks) of the mutant, graded on the CPU by the
    checks of the functions it can change (`affected`)."""
    from grader.engine import CheckOptions, check_submission

    path = folder / LABS[mutant.lab]
    path.write_text(mutant.source)
    options = CheckOptions(device="cpu", functions=affected(mutant))
    report = check_submission(path, lab=mutant.lab, options=options,
                              sandbox=sandbox)  # type: ignore[arg-type]
    return report.score, report.max_score, [c.id for c in report.checks
                                            if c.status == "failed"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lab", choices=sorted(LABS), action="append")
    parser.add_argument("--list", action="store_true", help="list the mutants, grade none")
    parser.add_argument("--limit", type=int, default=0, help="at most N mutants per lab")
    args = parser.parse_args()
    from grader.sandbox import Sandbox

    known = equivalents()
    for lab in args.lab or sorted(LABS):
        found = mutants(lab)[:args.limit or None]
        if args.list:
            for mutant in found:
                print(f"{lab} {mutant.id}")
            continue
        total, caught = Counter[str](), Counter[str]()
        survivors: list[Mutant] = []
        started = time.monotonic()
        with Sandbox([lab]) as sandbox, tempfile.TemporaryDirectory() as folder:
            for mutant in found:
                score, full, _ = grade(mutant, sandbox, Path(folder))
                total[mutant.operator] += 1
                if score < full:
                    caught[mutant.operator] += 1
                else:
                    survivors.append(mutant)
        listed = known.get(lab, {})
        equivalent = [m for m in survivors if m.id in listed]
        gaps = [m for m in survivors if m.id not in listed]
        stale = sorted(set(listed) - {m.id for m in found})
        n, k = sum(total.values()), sum(caught.values())
        print(f"lab {lab}: {k}/{n} caught; {k}/{n - len(equivalent)} of the non-equivalent "
              f"({len(equivalent)} equivalent, reviewed); {time.monotonic() - started:.0f} s")
        for operator in OPERATORS:
            if total[operator]:
                print(f"  {operator:14} {caught[operator]:4}/{total[operator]:<4}")
        for mutant in gaps:
            print(f"  SURVIVOR {mutant.id}")
        for mutant_id in stale:
            print(f"  listed as equivalent but no longer made: {mutant_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
