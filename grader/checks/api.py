"""API: the names a lab requires, and their signatures, as the submission defines them."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from grader.checks.findings import PASS, Finding, fail, phrase

_MISSING = "<missing>"
REPR_LIMIT = 200  # characters of a default's repr or a name kept in the record


def describe_callable(obj: Any) -> dict[str, Any]:
    """Child side: a callable's kind and parameters as plain data."""
    kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else "other"
    target = obj.__init__ if kind == "class" else obj
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return {"kind": kind, "parameters": None}
    parameters = []
    for parameter in list(signature.parameters.values())[:64]:
        if kind == "class" and parameter.name == "self":
            continue
        default = parameter.default
        parameters.append(
            {
                "name": parameter.name[:REPR_LIMIT],
                "kind": parameter.kind.name,
                "default": (_MISSING if default is inspect.Parameter.empty
                            else repr(default)[:REPR_LIMIT]),
            }
        )
    methods = (sorted(n[:REPR_LIMIT] for n in dir(obj) if not n.startswith("__"))[:200]
               if kind == "class" else [])
    return {"kind": kind, "parameters": parameters, "methods": methods}


def describe_module(module: ModuleType, names: Sequence[str]) -> dict[str, Any]:
    """Child side: `describe_callable` for each lab name, None for a name not defined."""
    return {
        name: describe_callable(getattr(module, name)) if hasattr(module, name) else None
        for name in names
    }


def judge_signature(
    description: dict[str, Any] | None,
    *,
    name: str,
    kind: str,
    parameters: list[tuple[str, str | None]],
    methods: tuple[str, ...] = (),
) -> Finding:
    """Compare a described callable with the lab's contract.

    `parameters` lists (name, repr of default or None for required) in order; extra parameters
    are allowed only with defaults, so every call the grader makes still binds.
    """
    if description is None:
        return fail("api_missing", name=name, kind=phrase(f"api_{kind}"))
    if description["kind"] != kind:
        return fail("api_wrong_kind", name=name, kind=phrase(f"api_{kind}"),
                    got=phrase(f"api_{description['kind']}"))
    got = description["parameters"]
    if got is None:
        return PASS
    got_by_name = {p["name"]: p for p in got if p["kind"] not in ("VAR_POSITIONAL", "VAR_KEYWORD")}
    expected_text = _signature_text(name, parameters)
    got_text = _signature_text(name, [(p["name"], _default(p)) for p in got])
    for position, (param_name, default) in enumerate(parameters):
        found = got_by_name.get(param_name)
        misplaced = found is not None and found["kind"] == "POSITIONAL_OR_KEYWORD" and (
            got.index(found) != position)
        if found is None or misplaced:
            return fail("api_signature", name=name, expected=expected_text, got=got_text)
        if default is not None and not same_default(_default(found), default):
            return fail("api_default", name=name, parameter=param_name, expected=default,
                        got=_default(found) or "no default")
    required = {n for n, _ in parameters}
    extra_required = [
        p["name"] for p in got
        if p["name"] not in required and p["default"] == _MISSING
        and p["kind"] not in ("VAR_POSITIONAL", "VAR_KEYWORD")
    ]
    if extra_required:
        return fail("api_signature", name=name, expected=expected_text, got=got_text)
    missing_methods = [m for m in methods if m not in description.get("methods", [])]
    if missing_methods:
        return fail("api_missing_method", name=name, method=missing_methods[0])
    return PASS


def same_default(got: str | None, expected: str) -> bool:
    """Defaults compared by value: `0` equals `0.0`, `[0.9, 0.999]` equals `(0.9, 0.999)`."""
    if got is None:
        return False
    try:
        got_value, expected_value = ast.literal_eval(got), ast.literal_eval(expected)
    except (ValueError, SyntaxError):
        return got == expected
    if isinstance(got_value, (list, tuple)) and isinstance(expected_value, (list, tuple)):
        return tuple(got_value) == tuple(expected_value)
    return bool(got_value == expected_value and type(got_value) is not str)


def _default(parameter: dict[str, Any]) -> str | None:
    return None if parameter["default"] == _MISSING else parameter["default"]


def _signature_text(name: str, parameters: list[tuple[str, str | None]]) -> str:
    inner = ", ".join(p if d is None else f"{p}={d}" for p, d in parameters)
    return f"{name}({inner})"
