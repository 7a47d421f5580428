"""What a submission's source reaches, attributed to the lab names that reach it.

One parse and one walk of the syntax tree, shared by the policy scan (policy.py: torch.optim)
and the integrity scan (integrity.py). Both run in the sandbox child *before* the submission is
imported: no student code has run there yet, so the result is as trustworthy as the grader's own
code, and a source built to make the syntax tree huge (docs/sandbox.md#numbers-behind-the-code)
costs the child's bounded memory and time, never the grading process's.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass

EVIDENCE_LIMIT = 5  # findings kept per lab name
EVIDENCE_CHARS = 160


@dataclass(frozen=True)
class Source:
    text: str
    tree: ast.Module
    # Each top-level statement with every node under it (walked once).
    statements: tuple[tuple[ast.stmt, tuple[ast.AST, ...]], ...]

    @property
    def nodes(self) -> list[ast.AST]:
        return [node for _, nodes in self.statements for node in nodes]

    def top_level(self) -> list[tuple[ast.stmt, tuple[ast.AST, ...]]]:
        """The statements that run at import, outside any definition: not the definitions,
        and not an `if __name__ == "__main__":` block (the student's own test code, which
        grading never runs)."""
        return [(stmt, nodes) for stmt, nodes in self.statements
                if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and not _main_guard(stmt)]

    def segment(self, node: ast.AST) -> str:
        text = ast.get_source_segment(self.text, node) or ""
        return " ".join(text.split())[:EVIDENCE_CHARS]


def _main_guard(stmt: ast.stmt) -> bool:
    test = stmt.test if isinstance(stmt, ast.If) else None
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def parse(text: str) -> Source:
    """Raises SyntaxError (or ValueError, RecursionError, MemoryError) as ast.parse does."""
    tree = ast.parse(text)
    return Source(text, tree, tuple((stmt, tuple(ast.walk(stmt))) for stmt in tree.body))


Matcher = Callable[[ast.AST], "str | None"]  # a node's finding (a label, may be ""), or None


@dataclass(frozen=True)
class Attributed:
    """Findings by lab name (its own body, or a helper it calls), at module level, and
    anywhere in the file (a helper no lab name calls included)."""

    by_name: dict[str, list[str]]
    module: list[str]
    anywhere: list[str]


def attribute(source: Source, names: Sequence[str], matcher: Matcher) -> Attributed:
    """Each lab name's findings: in its own definition, or else the first helper it reaches
    (a definition that calls another one with findings is tainted by it)."""
    definitions = {stmt.name: nodes for stmt, nodes in source.statements
                   if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}

    def found(nodes: tuple[ast.AST, ...]) -> list[str]:
        hits = []
        for node in nodes:
            label = matcher(node) if hasattr(node, "lineno") else None
            if label is not None:
                where = f"line {node.lineno}: "  # type: ignore[attr-defined]
                hits.append(where + (f"{label}: " if label else "") + source.segment(node))
                if len(hits) >= EVIDENCE_LIMIT:
                    break
        return hits

    # Each statement's findings, found once: a definition's own, the module's and the
    # file's are the first of them in order (each list is cut at the same limit).
    hits = [(stmt, found(nodes)) for stmt, nodes in source.statements]
    evidence = {stmt.name: found_here for stmt, found_here in hits
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    references = {name: {sub.id for sub in nodes if isinstance(sub, ast.Name)} & set(definitions)
                  for name, nodes in definitions.items()}
    changed = True
    while changed:  # helpers that reach it taint their callers
        changed = False
        for name, refs in references.items():
            if evidence[name]:
                continue
            tainted = sorted(r for r in refs if r != name and evidence[r])
            if tainted:
                evidence[name] = [f"calls {tainted[0]}: {evidence[tainted[0]][0]}"]
                changed = True
    top_level = {stmt for stmt, _ in source.top_level()}  # nodes hash by identity
    module = [hit for stmt, found_here in hits if stmt in top_level
              for hit in found_here][:EVIDENCE_LIMIT]
    anywhere = [hit for _, found_here in hits for hit in found_here][:EVIDENCE_LIMIT]
    return Attributed({name: evidence.get(name, []) for name in names}, module, anywhere)


def method_calls(source: Source, names: Sequence[str]) -> dict[str, list[str]]:
    """`Class.method` to the lab functions its body calls by name, for each method of a lab
    class (`SGD.zero_grad` calling `zero_grad(self.params)`): so that a method failing only
    through a broken function of the same file is told so (engine/scoring.py
    calls_into_failures)."""
    functions = set(names)
    calls: dict[str, list[str]] = {}
    for stmt, _ in source.statements:
        if not (isinstance(stmt, ast.ClassDef) and stmt.name in functions):
            continue
        for method in stmt.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            called = [node.func.id for node in ast.walk(method) if isinstance(node, ast.Call)
                      and isinstance(node.func, ast.Name) and node.func.id in functions
                      and node.func.id != stmt.name]
            if called:
                calls[f"{stmt.name}.{method.name}"] = list(dict.fromkeys(called))
    return calls
