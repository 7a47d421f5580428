"""Grading-process side of the modules lab: the checks table.

A model's entries are judged one by one, in state-dict order, each named as the student's code
names it (`0.weight`, `1.num_batches_tracked`); the first that fails is the finding.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from grader.checks.allocation import judge_allocations
from grader.checks.core import every_case, judge_cases, values_close, version_advanced
from grader.checks.errors import error_finding
from grader.checks.findings import Finding, fail, phrase
from grader.labs.base import CheckSpec, Lab, signature_judge
from grader.labs.modules import FILENAME, reproduce
from grader.labs.modules.inputs import INTEGER_KEYS, MLP_KEYS, MLP_PARAMETERS, Case
from grader.labs.modules.plan import FUNCTIONS, SIGNATURES, lab_cases
from grader.labs.modules.records import record_type
from grader.labs.modules.reference import averaged, batchnorm_statistics, loaded
from grader.labs.reproducers import itemsize

Rule = Callable[[Case, dict[str, Any]], Finding | None]
STATISTICS = ("running_mean", "running_var", "num_batches_tracked")


def state_case(case: Case) -> bool:
    return "measure" not in case


def metered(case: Case) -> bool:
    return case.get("measure") == "allocation"


def loads(case: Case) -> bool:
    return "problem" not in case


def refused(case: Case) -> bool:
    return "problem" in case


def _returns(function: str, key: str, name: str) -> Rule:
    def rule(case: Case, observed: dict[str, Any]) -> Finding | None:
        if not observed[key]:
            return fail("not_returned", function=function, tensor=name, where=case["id"],
                        got=phrase("another_object"))
        return None

    return rule


# --- a model's entries -------------------------------------------------------------------------

def _kept(function: str) -> Rule:
    def rule(case: Case, observed: dict[str, Any]) -> Finding | None:
        for key, kept in zip(MLP_KEYS, observed["kept"], strict=True):
            if not kept:
                return fail("module_entry_replaced", function=function, tensor=key,
                            where=case["id"])
        return None

    return rule


def _same_memory(function: str) -> Rule:
    def rule(case: Case, observed: dict[str, Any]) -> Finding | None:
        for key, before, after in zip(MLP_KEYS, observed["state_before"],
                                      observed["state_after"], strict=True):
            if after["ptr"] != before["ptr"]:
                return fail("storage_replaced", function=function, tensor=key,
                            where=case["id"])
        return None

    return rule


def _versions(function: str, keys: tuple[str, ...] = MLP_KEYS) -> Rule:
    def rule(case: Case, observed: dict[str, Any]) -> Finding | None:
        for key, before, after in zip(keys, observed["state_before"][:len(keys)],
                                      observed["state_after"][:len(keys)], strict=True):
            found = version_advanced(function, key, before, after, where=case["id"])
            if found is not None:
                return found
        return None

    return rule


def _values(function: str, expected: Callable[[Case], list[torch.Tensor]],
            keys: tuple[str, ...] = MLP_KEYS) -> Rule:
    def rule(case: Case, observed: dict[str, Any]) -> Finding | None:
        actual_values = observed["values_after"][:len(keys)]
        for key, actual, want in zip(keys, actual_values, expected(case), strict=True):
            if actual.dtype in (torch.int64, torch.int32) or key in INTEGER_KEYS:
                if not torch.equal(actual, want.to(actual.dtype)):
                    return fail("values_mismatch", tensor=key, where=case["id"],
                                function=function, expected_value=float(want),
                                index=0, atol=0.0, rtol=0.0, actual_value=float(actual),
                                mismatched=1, total=1, percent=100.0,
                                max_abs_diff=abs(float(actual) - float(want)))
                continue
            found = values_close(actual, want, tensor=key, where=case["id"],
                                 function=function)
            if found is not None:
                return found
        return None

    return rule


def _no_history(function: str) -> Rule:
    """Parameters stay leaves that require grad; buffers record no history either."""
    def rule(case: Case, observed: dict[str, Any]) -> Finding | None:
        for key, after in zip(MLP_KEYS, observed["state_after"], strict=True):
            parameter = key in MLP_PARAMETERS
            if after["grad_fn"] is not None or (parameter and not (
                    after["is_leaf"] and after["requires_grad"])):
                return fail("param_history", function=function, tensor=key,
                            is_leaf=after["is_leaf"], requires_grad=after["requires_grad"],
                            grad_fn=after["grad_fn"])
        return None

    return rule


# --- load_state_ -------------------------------------------------------------------------------

def _optimizer_trains(case: Case, observed: dict[str, Any]) -> Finding | None:
    if not observed.get("optimizer_trains", True):
        return fail("optimizer_detached", function="load_state_", where=case["id"])
    return None


def _raises(case: Case, observed: dict[str, Any]) -> Finding | None:
    error, key = observed["error"], case["key"]
    if error is not None and (error["type"] == "NotImplementedError" or "kept" not in observed):
        return error_finding(error, function="load_state_", case_id=case["id"])
    if error is None:
        return fail("load_state_accepts", function="load_state_", key=key,
                    problem=case["problem"])
    if "RuntimeError" not in (error["type"], *error["bases"]) or key not in error["message"]:
        return fail("load_state_error", function="load_state_", key=key,
                    error_type=error["type"], error=error["message"][:200])
    return None


def _atomic(case: Case, observed: dict[str, Any]) -> Finding | None:
    error = observed["error"]
    if error is not None and (error["type"] == "NotImplementedError" or "kept" not in observed):
        return error_finding(error, function="load_state_", case_id=case["id"])
    for key, kept, before, after in zip(MLP_KEYS, observed["kept"], observed["values_before"],
                                        observed["values_after"], strict=True):
        if not kept or before.shape != after.shape or not torch.equal(before, after):
            return fail("not_atomic", function="load_state_", tensor=key, where=case["id"])
    return None


# --- tie_weights_ ------------------------------------------------------------------------------

def _tied(case: Case, observed: dict[str, Any]) -> Finding | None:
    if not observed["decoder_has_embedding_weight"]:
        return fail("not_tied", function="tie_weights_", where=case["id"])
    return None


def _listed_once(case: Case, observed: dict[str, Any]) -> Finding | None:
    if observed["listed_over_weight"] != 1:
        return fail("tied_twice", function="tie_weights_", count=observed["listed_over_weight"])
    return None


def _bias_kept(case: Case, observed: dict[str, Any]) -> Finding | None:
    if not observed["bias_kept"]:
        return fail("module_entry_replaced", function="tie_weights_", tensor="decoder.bias",
                    where=case["id"])
    return None


def _embedding_kept(case: Case, observed: dict[str, Any]) -> Finding | None:
    if not observed["embedding_kept"]:
        return fail("embedding_changed", function="tie_weights_", where=case["id"])
    return None


# --- ema_update_model_, batchnorm_update_ ------------------------------------------------------

def _ema_allocation(case: Case, observed: dict[str, Any]) -> Finding | None:
    # The budget from the case, not from the weight the call left (a float64 one doubles it).
    nbytes = case["width"] ** 2 * itemsize(case["dtype"])
    found = judge_allocations({**observed, "nbytes": nbytes, "host_peak_bytes": 0},
                              function="ema_update_model_", tensor="weight", where=case["id"])
    return None if found.passed else found


def _source_untouched(case: Case, observed: dict[str, Any]) -> Finding | None:
    if not observed["source_untouched"]:
        return fail("input_modified", function="ema_update_model_", tensor="model",
                    where=case["id"])
    return None


def _returns_none(case: Case, observed: dict[str, Any]) -> Finding | None:
    if not observed["returned_none"]:
        return fail("not_none", function="batchnorm_update_", where=case["id"])
    return None


def _statistics_memory(case: Case, observed: dict[str, Any]) -> Finding | None:
    for name, before, after in zip(STATISTICS, observed["state_before"],
                                   observed["state_after"], strict=True):
        if after["ptr"] != before["ptr"]:
            return fail("storage_replaced", function="batchnorm_update_", tensor=name,
                        where=case["id"])
    return None


def _statistics_history(case: Case, observed: dict[str, Any]) -> Finding | None:
    for name, after in zip(STATISTICS, observed["state_after"], strict=True):
        if after["grad_fn"] is not None or after["requires_grad"]:
            return fail("statistics_history", function="batchnorm_update_", tensor=name,
                        grad_fn=after["grad_fn"])
    return None


def _counts(case: Case, observed: dict[str, Any]) -> Finding | None:
    got, want = observed["values_after"][2], batchnorm_statistics(case)[2]
    if not torch.equal(got, want):
        return fail("batches_miscounted", function="batchnorm_update_", where=case["id"],
                    expected=int(want), got=int(got) if got.numel() == 1 else str(got.tolist()))
    return None


def _check(function: str, name: str, kind: str, rule: Rule, *, select: Callable[[Case], bool]
           = every_case, allow_error: bool = False, shown_by: tuple[str, ...] = ()
           ) -> CheckSpec:
    return CheckSpec(f"{function}.{name}", kind,  # type: ignore[arg-type]
                     judge_cases(function, select, rule, allow_error=allow_error),
                     shown_by=shown_by)


def _signature(function: str) -> CheckSpec:
    return CheckSpec(f"{function}.signature", "api", signature_judge(
        function, kind="function", parameters=SIGNATURES[function]), per_device=False)


LOAD, TIE, EMA, NORM = FUNCTIONS
_LOADED = ("load_state_.values",)
_AVERAGED = ("ema_update_model_.values",)
_NORMED = ("batchnorm_update_.values",)
CHECKS = (
    _signature(LOAD),
    _check(LOAD, "returns_module", "identity", _returns(LOAD, "returned_is_module", "module"),
           select=loads, shown_by=_LOADED),
    _check(LOAD, "keeps_objects", "identity", _kept(LOAD), select=loads, shown_by=_LOADED),
    _check(LOAD, "optimizer_trains", "identity", _optimizer_trains, select=loads,
           shown_by=_LOADED),
    _check(LOAD, "same_memory", "storage", _same_memory(LOAD), select=loads, shown_by=_LOADED),
    _check(LOAD, "version_advances", "version", _versions(LOAD), select=loads),
    _check(LOAD, "values", "numerics", _values(LOAD, loaded), select=loads),
    _check(LOAD, "no_history", "autograd", _no_history(LOAD), select=loads, shown_by=_LOADED),
    _check(LOAD, "raises_like_torch", "side_effect", _raises, select=refused,
           allow_error=True),
    _check(LOAD, "atomic", "side_effect", _atomic, select=refused, allow_error=True,
           shown_by=("load_state_.raises_like_torch",)),
    _signature(TIE),
    _check(TIE, "returns_decoder", "identity", _returns(TIE, "returned_is_decoder", "decoder"),
           shown_by=("tie_weights_.same_parameter",)),
    _check(TIE, "same_parameter", "identity", _tied),
    _check(TIE, "listed_once", "identity", _listed_once,
           shown_by=("tie_weights_.same_parameter",)),
    _check(TIE, "keeps_bias", "identity", _bias_kept, shown_by=("tie_weights_.same_parameter",)),
    _check(TIE, "keeps_embedding", "side_effect", _embedding_kept,
           shown_by=("tie_weights_.same_parameter",)),
    _signature(EMA),
    _check(EMA, "returns_ema", "identity", _returns(EMA, "returned_is_ema", "ema"),
           select=state_case, shown_by=_AVERAGED),
    _check(EMA, "keeps_objects", "identity", _kept(EMA), select=state_case,
           shown_by=_AVERAGED),
    _check(EMA, "same_memory", "storage", _same_memory(EMA), select=state_case,
           shown_by=_AVERAGED),
    _check(EMA, "version_advances", "version", _versions(EMA), select=state_case),
    _check(EMA, "values", "numerics", _values(EMA, averaged), select=state_case),
    _check(EMA, "model_untouched", "side_effect", _source_untouched, select=state_case,
           shown_by=_AVERAGED),
    _check(EMA, "no_history", "autograd", _no_history(EMA), select=state_case,
           shown_by=_AVERAGED),
    _check(EMA, "no_full_size_temporary", "allocation", _ema_allocation, select=metered,
           shown_by=_AVERAGED),
    _signature(NORM),
    _check(NORM, "returns_none", "identity", _returns_none, shown_by=_NORMED),
    _check(NORM, "same_memory", "storage", _statistics_memory, shown_by=_NORMED),
    _check(NORM, "version_advances", "version", _versions(NORM, STATISTICS)),
    _check(NORM, "values", "numerics", _values(NORM, lambda case: batchnorm_statistics(case)[:2],
                                               STATISTICS[:2])),
    _check(NORM, "counts_batches", "numerics", _counts),
    _check(NORM, "no_history", "autograd", _statistics_history, shown_by=_NORMED),
)

LAB = Lab(
    name="modules",
    filename=FILENAME,
    functions=FUNCTIONS,
    checks=CHECKS,
    cases=lab_cases,
    forbidden_package="",
    rubric_path=Path(__file__).with_name("rubric.toml"),
    record_type=record_type,
    reproducer=reproduce.reproducer,
)
