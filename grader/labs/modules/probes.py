"""Child side of the modules lab: call each function on each case and record what happened.

The members the sandbox calls are grader/sandbox/probes_contract.py's `LabProbes`. The module
methods a probe reads a model through (`state_dict`, `parameters`) and the optimizer it builds
are the classes' own, taken when this module is imported (in the worker, before any submission
runs): a submission that overrides them on an instance is not asked what it did.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch
from torch import nn
from torch.optim import SGD

from grader.checks import tensors
from grader.checks.allocation import AllocationTracker, warm_up_meters
from grader.checks.api import describe_module
from grader.labs.modules.inputs import (
    LR,
    Case,
    build_batch,
    build_mlp,
    build_state,
    build_statistics,
    build_tied_pair,
    build_wide,
)
from grader.labs.modules.inputs import witnessed as witnessed
from grader.labs.modules.plan import FUNCTIONS as FUNCTIONS
from grader.sandbox.child import call_student
from grader.sandbox.outside_meter import NO_METER, OutsideMeter
from grader.sandbox.probing import run_cases
from grader.sandbox.witness import NO_ARENA, Arena

_state_dict = nn.Module.state_dict
_named_parameters = nn.Module.named_parameters
_parameters = nn.Module.parameters
_ModuleDict = nn.ModuleDict
_Parameter = nn.Parameter
_ones_like = torch.ones_like
_SGD = SGD


def warm_up() -> None:
    """Runs once in the zygote: an optimizer's first step imports what it needs (its compiler
    checks), so no child pays for it within its time limit."""
    weight = _Parameter(torch.zeros(2))
    weight.grad = torch.ones(2)
    _SGD([weight], lr=0.1).step()
    warm_up_meters()


def describe_api(module: ModuleType) -> dict[str, Any]:
    return describe_module(module, FUNCTIONS)


def probe(module: ModuleType, function: str, *, device: str, cases: list[Case],
          arena: Arena = NO_ARENA, meter: OutsideMeter = NO_METER) -> dict[str, Any]:
    """`arena` and `meter` go unused: this lab's records are read inside the child."""
    return {"cases": run_cases(module, function, cases,
                               lambda target, case: _PROBES[function](target, case, device))}


def _entries(model: nn.Module) -> dict[str, torch.Tensor]:
    return dict(_state_dict(model, keep_vars=True))


def _module_record(held: list[tuple[str, torch.Tensor]], now: dict[str, torch.Tensor]
                   ) -> dict[str, Any]:
    """Of each entry held before the call: whether the model still holds that object, and
    the state and values of what it holds now under that name."""
    current = [now.get(name, tensor) for name, tensor in held]
    return {"kept": [now.get(name) is tensor for name, tensor in held],
            "state_after": [tensors.state(t) for t in current],
            "values_after": [tensors.values(t) for t in current]}


# --- load_state_ -----------------------------------------------------------------------------

def probe_load_state(load_state_: Any, case: Case, device: str) -> dict[str, Any]:
    model = build_mlp(case["seed"], case["dtype"], device)
    state = build_state(case, device)
    held = list(_entries(model).items())
    before = [tensors.state(t) for _, t in held]
    values_before = [tensors.values(t) for _, t in held]
    optimizer = _SGD(list(_parameters(model)), lr=LR)  # built before, as a training script does
    returned, error = call_student(load_state_, model, state)
    record: dict[str, Any] = {"error": error, "returned_is_module": returned is model,
                              "state_before": before, "values_before": values_before,
                              **_module_record(held, _entries(model))}
    if error is None:
        record["optimizer_trains"] = _optimizer_trains(model, optimizer)
    return record


def _optimizer_trains(model: nn.Module, optimizer: SGD) -> bool:
    """A step of the optimizer built before the call moves every parameter the model now
    holds: it holds the same objects."""
    now = dict(_named_parameters(model))
    start = {name: tensors.values(p) for name, p in now.items()}
    for group in optimizer.param_groups:
        for p in group["params"]:
            p.grad = _ones_like(p)
    optimizer.step()
    return all(not tensors.same_values(tensors.values(p), start[name])
               for name, p in now.items())


# --- tie_weights_ ----------------------------------------------------------------------------

def probe_tie_weights(tie_weights_: Any, case: Case, device: str) -> dict[str, Any]:
    decoder, embedding = build_tied_pair(case, device)
    weight, bias = embedding.weight, decoder.bias
    weight_values = tensors.values(weight)
    returned, error = call_student(tie_weights_, decoder, embedding)
    record: dict[str, Any] = {"error": error, "returned_is_decoder": returned is decoder}
    if error is not None:
        return record
    listed = list(_parameters(_ModuleDict({"embedding": embedding, "decoder": decoder})))
    record.update({
        "decoder_has_embedding_weight": decoder.weight is weight,
        "embedding_kept": embedding.weight is weight
        and tensors.same_values(weight, weight_values),
        "bias_kept": decoder.bias is bias,
        "listed": len(listed),
        "listed_over_weight": sum(isinstance(p, torch.Tensor)
                                  and tensors.state(p)["ptr"] == tensors.state(weight)["ptr"]
                                  for p in listed),
    })
    return record


# --- ema_update_model_ -----------------------------------------------------------------------

def probe_ema(ema_update_model_: Any, case: Case, device: str) -> dict[str, Any]:
    if case.get("measure") == "allocation":
        return _ema_allocations(ema_update_model_, case, device)
    ema = build_mlp(case["seed"], case["dtype"], device)
    model = build_mlp(case["seed"] + 500, case["dtype"], device)
    held = list(_entries(ema).items())
    before = [tensors.state(t) for _, t in held]
    source = list(_entries(model).values())
    source_values = [tensors.values(t) for t in source]
    source_versions = [tensors.state(t)["version"] for t in source]
    returned, error = call_student(ema_update_model_, ema, model, case["decay"])
    now = list(_entries(model).values())
    return {"error": error, "returned_is_ema": returned is ema, "state_before": before,
            **_module_record(held, _entries(ema)),
            "source_untouched": len(now) == len(source) and all(
                a is b and tensors.same_values(a, v) and tensors.state(a)["version"] == n
                for a, b, v, n in zip(now, source, source_values, source_versions,
                                      strict=True))}


def _ema_allocations(ema_update_model_: Any, case: Case, device: str) -> dict[str, Any]:
    """What the dispatch tracker saw allocated during one update of a wide model."""
    width = case["width"]
    ema = build_wide(case["seed"], width, case["dtype"], device)
    model = build_wide(case["seed"] + 500, width, case["dtype"], device)
    held = [*_entries(ema).values(), *_entries(model).values()]
    with AllocationTracker(held) as tracker:
        _, error = call_student(ema_update_model_, ema, model, case["decay"])
    weight = _entries(ema)["weight"]
    return {"error": error, "allocations": tracker.events, "numel": width * width,
            "nbytes": width * width * weight.element_size()}


# --- batchnorm_update_ -----------------------------------------------------------------------

def probe_batchnorm(batchnorm_update_: Any, case: Case, device: str) -> dict[str, Any]:
    statistics = build_statistics(case, device)
    before = [tensors.state(t) for t in statistics]
    keywords = {"momentum": case["momentum"]} if "momentum" in case else {}
    returned_none, error = True, None
    for step in range(case["steps"]):
        returned, error = call_student(batchnorm_update_, *statistics,
                                       build_batch(case, step, device), **keywords)
        returned_none = returned_none and returned is None
        if error is not None:
            break
    return {"error": error, "returned_none": returned_none, "state_before": before,
            "state_after": [tensors.state(t) for t in statistics],
            "values_after": [tensors.values(t) for t in statistics]}


_PROBES = {"load_state_": probe_load_state, "tie_weights_": probe_tie_weights,
           "ema_update_model_": probe_ema, "batchnorm_update_": probe_batchnorm}
