"""Issue 26: every judge is total over the records the checks admit (labs/records.py
`checked`, types and case). A record is drawn by hypothesis over its probe's record type, then
brought to its case by what the check says is wrong with it (a list of another length, a copy of
another shape); each admitted record goes to every judge of its function. A judge that raises
there would be the grader's bug (exit 3) on a record a child can write.

The labs, functions, cases and record types are all read from grader.labs, never named here.
"""

from __future__ import annotations

import json
import re
import types
import typing
from typing import Any

import pytest
import torch
import typing_extensions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grader.labs
from grader.checks.dtypes import DTYPES
from grader.checks.evidence import Evidence
from grader.labs import get_lab
from grader.labs.base import Lab
from grader.labs.records import MalformedRecord, checked

LABS = sorted(grader.labs.LAB_FILES)
EXAMPLES = 20  # hypothesis examples per function, to bound time (docs/semantics.md#measurements)
WORDS = ["", "Tensor", "tuple", "list", "float32", "float64", "float16", "bfloat16",
         "RuntimeError", "ValueError", "TypeError", "AttributeError", "Exception",
         "AddBackward0", "MulBackward0", "aten::add", "aten::empty", "a leaf Variable that "
         "requires grad is being used in an in-place operation."]


def _shapes(case: Any) -> list[list[int]]:
    """Every list of ints in the case (the shapes it names), with their reversals."""
    found: list[list[int]] = [[], [0], [1], [2, 3]]
    if isinstance(case, dict):
        for value in case.values():
            found += _shapes(value)
    elif isinstance(case, list):
        if case and all(isinstance(v, int) and not isinstance(v, bool) for v in case):
            found += [list(case), list(reversed(case))]
        else:
            for value in case:
                found += _shapes(value)
    return found


def _tensor(shape: list[int], dtype: str, values: list[float]) -> torch.Tensor:
    n = 1
    for size in shape:
        n *= size
    data = (values * (n // max(len(values), 1) + 1))[:n] if values else [0.0] * n
    return torch.tensor(data, dtype=torch.float64).reshape(shape).to(DTYPES[dtype])


def _strategy(kind: Any, case: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values of `kind` (a record type, or a part of one)."""
    origin = typing.get_origin(kind)
    if kind is type(None) or kind is None:
        return st.none()
    if kind is bool:
        return st.booleans()
    if kind is int:
        return st.integers(-3, 1 << 24)
    if kind is float:
        return st.floats(allow_nan=True, allow_infinity=True)
    if kind is str:
        return st.sampled_from(WORDS)
    if kind is torch.Tensor:
        dtypes = [case["dtype"]] * 3 + sorted(DTYPES) if "dtype" in case else sorted(DTYPES)
        return st.builds(_tensor, st.sampled_from(_shapes(case)), st.sampled_from(dtypes),
                         st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32),
                                  max_size=3))
    if origin in (typing.Union, types.UnionType):
        return st.one_of([_strategy(arg, case) for arg in typing.get_args(kind)])
    if origin is list:
        (item,) = typing.get_args(kind)
        return st.lists(_strategy(item, case), max_size=3)
    if typing_extensions.is_typeddict(kind):
        hints = typing_extensions.get_type_hints(kind)
        return st.fixed_dictionaries(
            {key: _strategy(hints[key], case) for key in kind.__required_keys__},
            optional={key: _strategy(hints[key], case) for key in kind.__optional_keys__})
    raise AssertionError(f"no strategy for {kind!r}: teach this test the new record type")


# What `checked` says of a record not of its case (labs/records.py count_is, tensor_is and the
# labs' fits), and how this test brings the record to its case from it.
_COUNT = re.compile(r"^(?P<path>[\w.]+): (?P<got>\d+) entries, the case has (?P<want>\d+)$")
_SHAPE = re.compile(r"^(?P<path>[\w.]+): shape \[.*\], the case's is (?P<want>\[.*\])$")
_DTYPE = re.compile(r"^(?P<path>[\w.]+): (?P<got>\w+), the case's is (?P<want>\w+)$")
_NUMEL = re.compile(r"^numel: .*, the case's is (?P<want>\d+)$")


def _at(record: Any, path: str) -> tuple[Any, Any]:
    parts: list[Any] = [int(p) if p.isdigit() else p for p in path.split(".")]
    parent = record
    for part in parts[:-1]:
        parent = parent[part]
    return parent, parts[-1]


def _repair(record: dict[str, Any], complaint: str) -> bool:
    """Change `record` as `complaint` asks; False where this test cannot."""
    state = {"ptr": 1, "version": 0, "is_leaf": True, "requires_grad": True, "grad_fn": None,
             "exact_type": True}
    if match := _COUNT.match(complaint):
        parent, key = _at(record, match["path"])
        items, want = parent[key], int(match["want"])
        if not items:
            return False
        parent[key] = (items * want)[:want]
        return True
    if match := _SHAPE.match(complaint):
        parent, key = _at(record, match["path"])
        old = parent[key]
        parent[key] = torch.zeros(json.loads(match["want"]), dtype=old.dtype)
        return True
    if match := _NUMEL.match(complaint):
        record["numel"] = int(match["want"])
        return True
    if match := _DTYPE.match(complaint):
        parent, key = _at(record, match["path"])
        parent[key] = parent[key].to(DTYPES[match["want"]])
        return True
    if complaint.endswith(": a gradient where the case has none"):
        parent, key = _at(record, complaint.split(":")[0] + ".x")
        parent["alias_values"] = parent["state_before"] = None
        return True
    if complaint.endswith(": no gradient where the case has one"):
        parent, key = _at(record, complaint.split(":")[0] + ".x")
        parent["alias_values"], parent["state_before"] = torch.zeros(0), state
        return True
    if complaint.endswith(".had_grad: not the case's schedule"):
        parent, key = _at(record, complaint.split(":")[0])
        parent[key] = not parent[key]
        return True
    if complaint == "steps: a step recorded after one that raised":
        for step in record["steps"][:-1]:
            step["error"] = None
        return True
    return False


def _admitted(lab: Lab, function: str, case: dict[str, Any], record: dict[str, Any]
              ) -> dict[str, Any] | None:
    """`record` brought to its case, if the check then admits it; else None."""
    record_type = lab.record_type(function, case)
    for _ in range(12):
        try:
            return checked(record_type, record)
        except MalformedRecord as exc:
            complaint = str(exc).removeprefix("not of its case: ")
            if not _repair(record, complaint):
                return None
    return None


def _units() -> list[tuple[str, str]]:
    return [(name, function) for name in LABS for function in get_lab(name).functions]


# Each case's strategy, built once: hypothesis works out what a strategy can draw the first
# time it draws from it, which for a record type's Union costs more than the drawing.
_CASE_STRATEGIES: dict[tuple[str, str, str], st.SearchStrategy[Any]] = {}


def _case_strategy(lab: Lab, function: str, case: dict[str, Any]) -> st.SearchStrategy[Any]:
    key = (lab.name, function, case["id"])
    if key not in _CASE_STRATEGIES:
        adapter = lab.record_type(function, case).adapter
        _CASE_STRATEGIES[key] = _strategy(adapter._type, case)  # the adapter's Union
    return _CASE_STRATEGIES[key]


@st.composite
def _records(draw: st.DrawFn, lab: Lab, function: str) -> dict[str, Any]:
    records = {}
    for case in lab.cases(function):
        record = draw(_case_strategy(lab, function, case))
        admitted = _admitted(lab, function, case, record)
        if admitted is not None:
            records[case["id"]] = admitted
    return records


@pytest.mark.slow
@pytest.mark.parametrize("lab_name,function", _units(), ids=[f"{a}.{b}" for a, b in _units()])
def test_every_judge_is_total_over_admitted_records(lab_name: str, function: str) -> None:
    lab = get_lab(lab_name)
    plan = tuple(lab.cases(function))

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(_records(lab, function))
    def judged(records: dict[str, Any]) -> None:
        # Only the cases whose record was admitted: a case with none is no result, which the
        # engine reports before any judge runs.
        admitted = tuple(case for case in plan if case["id"] in records)
        evidence = Evidence(api={}, static_policy=[], policy_calls=[], cases=records,
                            plan=admitted)
        for check in lab.checks_for(function):
            check.judge(evidence)  # raises: the grader's bug

    judged()
