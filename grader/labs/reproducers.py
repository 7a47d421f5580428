"""Reproducers as data: the few lines of plain Python that show a student one failed check
(docs/semantics.md#reproducers).

A lab's `reproduce.py` turns a failing case (plan.py's dict) and the check's finding into a
`Reproducer`: code lines that build the case's inputs with plain torch (the seeded draws of
the lab's inputs.py, written out), call the student's function, and end in an `Assert` or a
`Close` whose message is a catalog key (`[reproducers]` in grader/locales/), worded in the
student's language by grader/engine/wording.py. The code is text: the grading process builds
it and never runs it; the student does.

A reproducer must fail on the code that failed the check and pass on a correct one; a builder
returns None where a faithful plain-Python reproducer is not possible (an allocation seen only
by the sandbox's outside meter, a forbidden import), and that check is counted as not covered
(bench/reproducers.py). tests/test_reproducers.py runs every known mistake's reproducers.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from grader.checks.findings import Finding, Phrase


def itemsize(name: str) -> int:
    """Bytes per element of a dtype a case names (torch is loaded only when asked: the engine
    imports this module before the sandbox's worker starts)."""
    from grader.checks.dtypes import DTYPES

    return int(DTYPES[name].itemsize)


@dataclass(frozen=True)
class Runtime:
    """A message value known only when the reproducer runs (`step + 1` in a loop): the
    message becomes an f-string with this expression in it."""

    expression: str
    around: str = "{}"  # the words around the value: "params[{}]"


@dataclass(frozen=True)
class Assert:
    """`assert <condition>, <message>`; the message is `[reproducers].<key>` filled with
    `params`."""

    condition: str
    key: str
    params: dict[str, Any] = field(default_factory=dict)
    indent: int = 0


@dataclass(frozen=True)
class Close:
    """`torch.testing.assert_close(actual, expected, ...)` with the dtype's tolerances
    (docs/semantics.md#numerics-tolerances), NaN equal to NaN, the message in front of
    torch's own numbers."""

    actual: str
    expected: str
    dtype: str
    key: str
    params: dict[str, Any] = field(default_factory=dict)
    indent: int = 0

    @property
    def tolerance(self) -> tuple[float, float]:
        """The grader's own (docs/semantics.md#numerics-tolerances)."""
        from grader.checks.dtypes import DTYPES
        from grader.checks.numerics import tolerance

        return tolerance(DTYPES[self.dtype])


@dataclass(frozen=True)
class Raise:
    """`raise AssertionError(<message>) from <cause>`: a call that must not raise did, and
    its own traceback is shown above the message."""

    cause: str
    key: str
    params: dict[str, Any] = field(default_factory=dict)
    indent: int = 0


@dataclass(frozen=True)
class Comment:
    """`# <words>`: a line saying what the code below it does, `[reproducers].<key>`."""

    key: str
    params: dict[str, Any] = field(default_factory=dict)
    indent: int = 0


Line = str | Assert | Close | Raise | Comment


def kept_alive(names: str) -> list[Line]:
    """`aliases`: the memory of `names` (code: a tensor, or a list of them) as it is before
    the call. Holding it keeps it allocated, so a new storage cannot take its address: the
    pointer comparison then shows a replaced storage every time
    (docs/semantics.md#storage-reuse)."""
    value = f"[p.detach() for p in {names}]" if names == "params" else f"{names}.detach()"
    return [Comment("kept_alive"), f"aliases = {value}"]


@dataclass(frozen=True)
class Reproducer:
    """What a student pastes next to their file: `names` are imported from it (in a notebook,
    where the kernel defines them, nothing is), then `lines` run."""

    names: tuple[str, ...]
    lines: tuple[Line, ...]


# --- writing code --------------------------------------------------------------------------

def dtype(name: str) -> str:
    """A dtype name of a case as code: `torch.float32`."""
    return f"torch.{name}"


def draw(shape: list[int] | tuple[int, ...], seed: int) -> str:
    """The seeded float64 draw every lab's inputs start from, as an expression."""
    return (f"torch.randn({list(shape)}, generator=torch.Generator().manual_seed({seed}), "
            "dtype=torch.float64)")


def same_values(a: str, b: str) -> str:
    """Bitwise equal, NaN equal to NaN (grader/checks/tensors.py `same_values`), as code."""
    return f"torch.equal({a}.isnan(), {b}.isnan()) and torch.equal({a}.nan_to_num(), " \
           f"{b}.nan_to_num())"


def kwargs_code(kwargs: dict[str, Any]) -> str:
    """Keyword arguments as code (`, dim=0, eps=1e-06`), after the positional ones."""
    return "".join(f", {key}={value!r}" for key, value in kwargs.items())


def indented(lines: list[Line], by: int) -> list[Line]:
    """Lines moved in by `by` levels (a block inside a loop or a `with`)."""
    moved: list[Line] = []
    for line in lines:
        if isinstance(line, str):
            moved.append(" " * (4 * by) + line if line else line)
        else:
            moved.append(replace(line, indent=line.indent + by))
    return moved


def raises(call: str, *, error: str = "Exception", bound: str = "error") -> list[str]:
    """`call` run so that what it raises is kept in `bound` (None when it returns)."""
    return [f"{bound} = None", "try:", f"    {call}", f"except {error} as caught:",
            f"    {bound} = caught"]


def must_not_raise(call: str, *, function: str) -> list[Line]:
    """`call`, where what it raises is the failure: the student's traceback, then ours."""
    return ["try:", f"    {call}", "except Exception as error:",
            Raise("error", "raised", {"function": function}, indent=1)]


# Finding keys of a call that raised (grader/checks/errors.py `error_finding`).
ERROR_KEYS = frozenset({"raised", "autograd_leaf_error", "autograd_saved_error",
                        "autograd_saved_input_error", "autograd_view_error",
                        "autograd_inplace_error"})


def profiled(call: list[Line], *, tensor: str, function: str) -> list[Line]:
    """`call` under torch's profiler, then the largest amount of memory any op of it held
    at once against the profiler's budget: a tenth of `tensor`'s bytes plus 4 KiB
    (grader/checks/allocation.py `over_budget`)."""
    return [
        "from torch.profiler import ProfilerActivity, profile",
        "",
        f"budget = {tensor}.numel() * {tensor}.element_size() / 10 + 4096",
        "with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], "
        "profile_memory=True) as prof:",
        *indented(call, 1),
        "largest = max((event.cpu_memory_usage for event in prof.events()), default=0)",
        Assert("largest <= budget", "temporary",
               {"function": function, "tensor": tensor, "size": Runtime("largest")}),
    ]


def clearly_over(finding: Finding, nbytes: int) -> bool:
    """Whether an allocation finding's size (`describe_bytes` text: "2.0 MB") is at least
    twice the budget of a tensor of `nbytes` (a copy, a mask): what a reproducer shows outside
    the sandbox. A peak nearer the budget may hold the sandbox's own meters' objects."""
    number, _, unit = str(finding.params.get("size", "")).partition(" ")
    scale = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}.get(unit)
    try:
        return scale is not None and float(number) * scale >= 2 * (nbytes / 10 + 4096)
    except ValueError:
        return False


def traced(call: list[Line], *, tensor: str, function: str) -> list[Line]:
    """`call` under tracemalloc, which sees Python's heap (numpy's arrays), not torch's."""
    return [
        "import tracemalloc",
        "",
        f"budget = {tensor}.numel() * {tensor}.element_size() / 10 + 4096",
        "tracemalloc.start()",
        "with torch.no_grad():",
        *indented(call, 1),
        "largest = tracemalloc.get_traced_memory()[1]",
        "tracemalloc.stop()",
        Assert("largest <= budget", "host_temporary",
               {"function": function, "tensor": tensor, "size": Runtime("largest")}),
    ]


def signature(name: str, *, kind: str, parameters: list[tuple[str, str | None]],
              methods: tuple[str, ...], finding_key: str,
              finding_params: dict[str, Any]) -> Reproducer | None:
    """The `api` check of one lab name (grader/checks/api.py `judge_signature`): its kind,
    its parameters in order (more only with defaults), a default, a method. A name the file
    does not define has none: importing it is the error."""
    lines: list[Line] = ["import inspect", ""]
    if finding_key == "api_wrong_kind":
        test = f"inspect.isclass({name})" if kind == "class" else \
            f"callable({name}) and not inspect.isclass({name})"
        return Reproducer((name,), (*lines, Assert(test, "api_kind", {
            "name": name, "kind": Phrase(f"api_{kind}", {})})))
    if finding_key == "api_missing_method":
        method = finding_params.get("method", methods[0] if methods else "")
        return Reproducer((name,), (*lines, Assert(f"hasattr({name}, {method!r})",
                                                   "api_method",
                                                   {"name": name, "method": method})))
    names = [parameter for parameter, _ in parameters]
    lines.append(f"found = inspect.signature({name}).parameters")
    if finding_key == "api_default":
        parameter = finding_params.get("parameter", "")
        default = dict(parameters).get(parameter)
        if default is None:
            return None
        value = f"found[{parameter!r}].default"
        if default.startswith(("(", "[")):  # (0.9, 0.999) equals [0.9, 0.999]
            value, default = f"list({value})", repr(list(_literal(default)))
        return Reproducer((name,), (*lines, Assert(
            f"{parameter!r} in found and {value} == {default}", "api_default",
            {"name": name, "parameter": parameter, "default": default})))
    if finding_key != "api_signature":
        return None
    text = f"{name}({', '.join(p if d is None else f'{p}={d}' for p, d in parameters)})"
    lines += [
        f"expected = {names!r}",
        "required = [n for n, p in found.items() if p.default is p.empty "
        "and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]",
        Assert("all(n in found for n in expected) and all(list(found).index(n) == i for i, n "
               "in enumerate(expected) if found[n].kind is found[n].POSITIONAL_OR_KEYWORD)",
               "api_signature",
               {"name": name, "signature": text}),
        Assert("set(required) <= set(expected)", "api_signature",
               {"name": name, "signature": text}),
    ]
    return Reproducer((name,), tuple(lines))


def _literal(text: str) -> Any:
    import ast

    return ast.literal_eval(text)
