"""Grading-process side of the optim lab: the checks table and the rules that judge the
probes' records (the cases are plan.py's, the expected values reference.py's).

Each judge is a pure function from `Evidence` to a `Finding`; points come from rubric.toml.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from grader.checks.allocation import judge_allocations
from grader.checks.core import (
    Rule,
    Selector,
    computes,
    each_case,
    judge_cases,
    plain_leaf,
    storage_kept,
    unless_computing,
    values_close,
    version_advanced,
)
from grader.checks.errors import error_finding
from grader.checks.evidence import Evidence
from grader.checks.findings import Finding, fail, phrase
from grader.checks.numerics import mismatch
from grader.checks.policy import judge_policy
from grader.checks.tensors import same_values
from grader.labs.base import CheckSpec, Lab, cached_by_content, signature_judge
from grader.labs.optim import FILENAME, reference, reproduce
from grader.labs.optim.inputs import (
    DTYPES,
    WITNESSED_GRADS,
    Case,
    attach_grads,
    build_params,
    describe,
    witnessed,
)
from grader.labs.optim.plan import (
    ADAM_CONFIGS,
    FORBIDDEN_PACKAGE,
    FUNCTIONS,
    SGD_CONFIGS,
    SIGNATURES,
    STATE_KEYS,
    lab_cases,
)
from grader.labs.optim.records import record_type

# --- shared judging helpers ------------------------------------------------------------------

def _config_text(config: dict[str, Any]) -> str:
    """Keyword arguments as code (`lr=0.1, momentum=0.9`): the same in every language."""
    return ", ".join(f"{key}={value}" for key, value in config.items())


# --- zero_grad -----------------------------------------------------------------------------

def _in_place_wanted(case: Case, in_place: bool | None) -> bool:
    """Whether a zero_grad case belongs to the group asked for (None: every case). The
    in-place cases with a parameter without a gradient are `missing_grads_stay_none`'s
    alone: a missing guard raises there, and costs that check only."""
    if _missing_guard_case(case) or _edge_grad_case(case):
        return False
    return in_place is None or (case["set_to_none"] is not True) == in_place


EDGE_GRADS = ("view", "leaf")


def _edge_grad_case(case: Case) -> bool:
    """A zero_grad case with a gradient that only the full rule zeroes (EDGE_GRADS): a
    shortcut raises there, which costs `zero_grad.edge_grads` alone."""
    return any(kind in EDGE_GRADS for kind in case.get("grads", []))


def _missing_guard_case(case: Case) -> bool:
    """A case where a function without `if p.grad is None` raises."""
    if case["probe"] == "trajectory":
        return bool(case.get("none_grads"))
    return "none" in case.get("grads", []) and case.get("set_to_none") is not True


def _zg_selector(in_place: bool | None) -> Selector:
    return lambda case: _in_place_wanted(case, in_place)


def _per_grad(rule: Callable[[Case, int, str, dict[str, Any]], Finding | None]) -> Rule:
    """A zero_grad rule applied to each parameter of a case: (case, index, grad kind, obs)."""
    def per_case(case: Case, observed: dict[str, Any]) -> Finding | None:
        for index, obs in enumerate(observed.get("params", [])):
            if (found := rule(case, index, case["grads"][index], obs)) is not None:
                return found
        return None

    return per_case


def _zg_identity(case: Case, index: int, kind: str, obs: dict[str, Any]) -> Finding | None:
    if kind != "none" and not obs["same_object"]:
        return fail("grad_replaced", function="zero_grad", tensor=f"params[{index}].grad",
                    case=case["id"], got=phrase("none" if obs["grad_is_none"] else "new_tensor"))
    return None


def _zg_storage(case: Case, index: int, kind: str, obs: dict[str, Any]) -> Finding | None:
    """The grad's original memory holds what the grad now holds (kept in place), or zeros
    (the old grad was zeroed, then replaced: the identity check reports that)."""
    if kind == "none":
        return None
    alias, now = obs["alias_values"], obs["grad_values"]
    same_memory = (now is not None and obs["same_object"] and obs["state_after"] is not None
                   and obs["state_before"] is not None
                   and obs["state_after"]["ptr"] == obs["state_before"]["ptr"])
    kept = same_values(alias, now) if same_memory else bool((alias == 0).all())
    if not kept:
        return fail("memory_not_zeroed", function="zero_grad", tensor=f"params[{index}].grad",
                    case=case["id"])
    return None


def _zg_numerics(case: Case, index: int, kind: str, obs: dict[str, Any]) -> Finding | None:
    values = obs["grad_values"]
    if kind == "none" or values is None:
        return None
    return values_close(values, torch.zeros_like(values), tensor=f"params[{index}].grad",
                        function="zero_grad",
                        where=phrase("grad_kind", kind=phrase(f"grad_{kind}"),
                                     case=case["id"]))


def _zg_history(case: Case, index: int, kind: str, obs: dict[str, Any]) -> Finding | None:
    after = obs["state_after"]
    if kind == "grad_fn" and after is not None and (after["grad_fn"] or after["requires_grad"]):
        return fail("grad_keeps_history", tensor=f"params[{index}].grad",
                    grad_fn=after["grad_fn"] or "requires_grad=True")
    return None


def _zg_missing(case: Case, index: int, kind: str, obs: dict[str, Any]) -> Finding | None:
    if kind == "none" and not obs["grad_is_none"]:
        return fail("grad_created", tensor=f"params[{index}].grad", case=case["id"])
    return None


def _zg_to_none(case: Case, index: int, kind: str, obs: dict[str, Any]) -> Finding | None:
    if not obs["grad_is_none"]:
        return fail("grad_not_none", tensor=f"params[{index}].grad", case=case["id"])
    return None


def _zg_params(case: Case, index: int, kind: str, obs: dict[str, Any]) -> Finding | None:
    if not obs["param_unchanged"]:
        return fail("param_changed", function="zero_grad", tensor=f"params[{index}]",
                    case=case["id"])
    return None


judge_zero_grad_identity = judge_cases("zero_grad", _zg_selector(True),
                                       _per_grad(_zg_identity))
judge_zero_grad_storage = judge_cases("zero_grad", _zg_selector(True),
                                      _per_grad(_zg_storage))
judge_zero_grad_numerics = judge_cases("zero_grad", _zg_selector(True),
                                       _per_grad(_zg_numerics))
judge_zero_grad_history = judge_cases(
    "zero_grad", lambda c: "grad_fn" in c["grads"] and _in_place_wanted(c, True),
    _per_grad(_zg_history))
judge_zero_grad_missing = judge_cases("zero_grad", lambda c: "none" in c["grads"],
                                      _per_grad(_zg_missing))
judge_zero_grad_to_none = judge_cases("zero_grad", _zg_selector(False),
                                      _per_grad(_zg_to_none))
judge_zero_grad_params = judge_cases("zero_grad", _zg_selector(None),
                                     _per_grad(_zg_params))
def _zg_edge(case: Case, index: int, kind: str, obs: dict[str, Any]) -> Finding | None:
    return _zg_numerics(case, index, kind, obs) if kind in EDGE_GRADS else None


def judge_zero_grad_edges(evidence: Evidence) -> Finding:
    """Zeroing an edge gradient does not raise (the case's own finding), and leaves it zero
    (a guard that skips it, `except RuntimeError: continue`), unless the plain gradients are
    not zeroed either: that mistake is exact_zeros', charged once."""
    zeroes = judge_zero_grad_numerics(evidence).passed
    rule = _per_grad(_zg_edge) if zeroes else (lambda case, observed: None)
    return judge_cases("zero_grad", _edge_grad_case, rule)(evidence)


# --- sgd_step ------------------------------------------------------------------------------

@cached_by_content
def _sgd_step_expected(case: Case) -> tuple[torch.Tensor, ...]:
    params = build_params(case, "cpu")
    attach_grads(params, case["grads"], case["seed"])
    return tuple(e.to(DTYPES[case["dtype"]])
                 for e in reference.sgd_step_result(params, case["lr"]))


def _is_state(case: Case) -> bool:
    """A state case of sgd_step's checks; the one with a parameter without a gradient is
    `skips_missing_grads`'s alone (a missing guard raises there)."""
    return case["measure"] == "state" and not _missing_guard_case(case)


def _is_missing_guard(case: Case) -> bool:
    return case["measure"] == "state" and _missing_guard_case(case)


def apply_witness(function: str, case: Case, observed: dict[str, Any],
                  memory: list[torch.Tensor]) -> str | None:
    """Where the record disagrees with the witnessed memory (read by the grading process
    after the call), the tensor it names; None, with the record now holding that memory.

    sgd_step: each parameter's original memory is what the record saw through its alias.
    zero_grad: each witnessed gradient's original memory, likewise. An optimizer's
    trajectory: where the record says a parameter kept its memory through every step, that
    memory holds the values it reports after the last step."""
    if case.get("probe") == "trajectory":
        return _witness_trajectory(observed.get("steps") or [], memory)
    params = observed.get("params")
    if params is None:  # the function is missing: nothing was called
        return None
    if case.get("probe") == "zero_grad":
        kept = [index for index, kind in enumerate(case["grads"]) if kind in WITNESSED_GRADS]
        name, aliases = "grad", [(index, params[index]) for index in kept
                                 if index < len(params)]
    else:
        name, aliases = "", list(enumerate(params))
    if len(aliases) != len(memory):
        return "params"
    for (index, obs), final in zip(aliases, memory, strict=True):
        if obs.get("alias_values") is None or not same_values(obs["alias_values"], final):
            return f"params[{index}]{'.' + name if name else ''}"
        obs["alias_values"] = final
    return None


def _witness_trajectory(steps: list[dict[str, Any]], memory: list[torch.Tensor]) -> str | None:
    if not steps:  # the constructor failed: nothing was stepped
        return None
    last = steps[-1]["params"]
    if len(last) != len(memory) or any(len(step["params"]) != len(memory) for step in steps):
        return "params"
    for index, final in enumerate(memory):
        first_ptr = steps[0]["params"][index]["state_before"]["ptr"]
        if any(step["params"][index]["state_after"]["ptr"] != first_ptr for step in steps):
            continue  # the record says the memory was replaced: the storage check fails it
        if not same_values(last[index]["values"], final):
            return f"params[{index}]"
        last[index]["values"] = final
    return None


def _per_param(rule: Callable[[Case, int, dict[str, Any]], Finding | None]) -> Rule:
    """A rule applied to each parameter of a case: (case, index, observation)."""
    def per_case(case: Case, observed: dict[str, Any]) -> Finding | None:
        for index, obs in enumerate(observed.get("params", [])):
            if (found := rule(case, index, obs)) is not None:
                return found
        return None

    return per_case


def _sgd_values(case: Case, index: int, obs: dict[str, Any]) -> Finding | None:
    where = phrase("dtype_lr", dtype=case["dtype"], lr=case["lr"])
    found = values_close(obs["values"], _sgd_step_expected(case)[index],
                         tensor=f"params[{index}]", where=where)
    if found is not None and same_values(obs["values"], _sgd_step_start(case)[index]):
        # The caller's parameter never got any values: no formula hint for that.
        return fail("not_written", function="sgd_step", tensor=f"params[{index}]",
                    where=where, why=phrase("unwritten_param"))
    return found


judge_sgd_step_values = judge_cases("sgd_step", _is_state, _per_param(_sgd_values))


@cached_by_content
def _sgd_step_start(case: Case) -> tuple[torch.Tensor, ...]:
    return tuple(p.detach() for p in build_params(case, "cpu"))


def _sgd_skips(case: Case, index: int, obs: dict[str, Any]) -> Finding | None:
    """A parameter without a gradient is skipped, without raising: its values and its
    `grad` (None) stay as they were. (How the others are updated is the other checks'.)"""
    if case["grads"][index] == "none" and not (
            same_values(obs["values"], _sgd_step_start(case)[index]) and obs["grad_untouched"]):
        return fail("missing_grad_touched", function="sgd_step", tensor=f"params[{index}]",
                    case=case["id"])
    return None


def _sgd_storage(case: Case, index: int, obs: dict[str, Any]) -> Finding | None:
    """Same pointer, and the original memory (seen through an alias) holds the new values:
    a swap that reuses the address (`p.data = empty; p.data = new`) fails too."""
    return storage_kept("sgd_step", f"params[{index}]", obs["state_before"], obs["state_after"],
                        obs["alias_values"], obs["values"])


def _sgd_version(case: Case, index: int, obs: dict[str, Any]) -> Finding | None:
    if case["grads"][index] == "none":
        return None
    return version_advanced("sgd_step", f"params[{index}]", obs["state_before"],
                            obs["state_after"])


def _sgd_history(case: Case, index: int, obs: dict[str, Any]) -> Finding | None:
    return plain_leaf("sgd_step", f"params[{index}]", obs["state_after"])


def _sgd_grad(case: Case, index: int, obs: dict[str, Any]) -> Finding | None:
    if not obs["grad_untouched"]:
        return fail("grad_modified", function="sgd_step", tensor=f"params[{index}].grad")
    return None


def _sgd_allocation(case: Case, observed: dict[str, Any]) -> Finding | None:
    return judge_allocations(observed, function="sgd_step", tensor="params[0]",
                             where=phrase("case_large_param", dtype=case["dtype"],
                                          shape="×".join(map(str, case["shapes"][0]))))


judge_sgd_step_skips_missing = judge_cases("sgd_step", _is_missing_guard, _per_param(_sgd_skips))
judge_sgd_step_storage = judge_cases("sgd_step", _is_state, _per_param(_sgd_storage))
def _sgd_computing(evidence: Evidence) -> Iterator[bool | None]:
    """Whether each parameter with a gradient, in each state case, shows sgd_step computing
    (checks/core.computes), lazily: `p.add_(0)` advances the version and computes nothing."""
    for case, observed, problem in each_case(evidence, "sgd_step", _is_state):
        if not problem.passed:
            continue
        want, start = _sgd_step_expected(case), _sgd_step_start(case)
        for index, obs in enumerate(observed.get("params", [])[:len(want)]):
            if case["grads"][index] != "none":
                yield computes(start[index], obs["values"], want[index])


# See NOTE: [shown to compute] in checks/core.py: the gate SGD_STEP_DID names this check.
judge_sgd_step_version = unless_computing(
    judge_cases("sgd_step", _is_state, _per_param(_sgd_version)), _sgd_computing,
    function="sgd_step", tensor="params")
judge_sgd_step_autograd = judge_cases("sgd_step", _is_state, _per_param(_sgd_history))
judge_sgd_step_allocation = judge_cases("sgd_step", lambda c: c["measure"] == "allocation",
                                        _sgd_allocation)
judge_sgd_step_grad = judge_cases("sgd_step", _is_state, _per_param(_sgd_grad))


# --- SGD and Adam --------------------------------------------------------------------------

@cached_by_content
def _trajectory(case: Case) -> tuple[tuple[torch.Tensor, ...], ...]:
    """Reference parameters after each step, cast to the case's dtype; built once per process."""
    build = reference.sgd_trajectory if case["class"] == "SGD" else reference.adam_trajectory
    dtype = DTYPES[case["dtype"]]
    return tuple(tuple(p.to(dtype) for p in step) for step in build(case))


@cached_by_content
def _trajectory_flat(case: Case) -> torch.Tensor:
    return torch.cat([p.reshape(-1) for step in _trajectory(case) for p in step])


def _step_error(cls: str, case: Case, steps: list[dict[str, Any]]) -> Finding | None:
    """The finding of the first step that raised, naming the step, or None."""
    for step, record in enumerate(steps):
        if record.get("error"):
            finding = error_finding(record["error"], function=f"{cls}.step", case_id=case["id"])
            return Finding(False, finding.key, {**finding.params, "step": step + 1},
                           finding.debug)
    return None


def _trajectory_rule(cls: str) -> Rule:
    def rule(case: Case, observed: dict[str, Any]) -> Finding | None:
        steps = observed["steps"]
        raised = _step_error(cls, case, steps)
        if raised is not None:
            return raised
        expected = _trajectory(case)
        flat = [obs["values"].reshape(-1) for record in steps for obs in record["params"]]
        if len(steps) == len(expected) and mismatch(torch.cat(flat),
                                                    _trajectory_flat(case)) is None:
            return None  # every step at once; the loop below only locates a failure
        for step, record in enumerate(steps):
            for index, obs in enumerate(record["params"]):
                found = values_close(obs["values"], expected[step][index],
                                     tensor=f"params[{index}]",
                                     where=phrase("at_step", step=step + 1))
                if found is not None:
                    return Finding(False, "trajectory_mismatch",
                                   {**found.params, "cls": cls, "step": step + 1,
                                    "config": _config_text(case["config"]),
                                    "rule": _update_rule(cls, case)})
        return None

    return rule


def _update_rule(cls: str, case: Case) -> Any:
    """The update rule of the options `case` turns on, as code (the trajectory hint): a
    drift with momentum is told how the buffer starts and goes on, one with weight decay
    how it enters, an edge value (`trajectory.boundaries.*`) how an option is tested."""
    config = case["config"]
    edge = case["id"].startswith("trajectory.boundaries")
    # Adam's edges other than weight decay (betas 0, eps 0) are told by rule_adam itself.
    parts = (["rule_edges"] if edge and cls == "SGD" else
             ["rule_edges_adam"] if edge and config.get("weight_decay") else [])
    if cls == "SGD":
        parts += [key for key, on in (("rule_sgd_maximize", config.get("maximize")),
                                      ("rule_weight_decay", config.get("weight_decay")),
                                      ("rule_sgd_momentum", config.get("momentum")),
                                      ("rule_sgd_nesterov", config.get("nesterov"))) if on]
        if not parts:
            parts.append("rule_sgd_plain")
    else:
        parts += ["rule_weight_decay"] if config.get("weight_decay") else []
        parts.append("rule_adam")
    return phrase(f"rules_{len(parts)}",
                  **{f"r{index}": phrase(key) for index, key in enumerate(parts, 1)})


def judge_trajectory(cls: str, name: str) -> Callable[[Evidence], Finding]:
    """One configuration's trajectory, or a group's (`trajectory.boundaries.*`); in a hidden
    plan of another config: nothing."""
    return judge_cases(cls, lambda c: c["id"] == f"trajectory.{name}"
                       or c["id"].startswith(f"trajectory.{name}."), _trajectory_rule(cls))


def _is_trajectory(case: Case) -> bool:
    return case["probe"] == "trajectory"


def _shared_trajectory(case: Case) -> bool:
    """The trajectories the class-wide checks read: not the one with parameters without a
    gradient, whose own trajectory check is what a missing guard costs."""
    return _is_trajectory(case) and not _missing_guard_case(case)


StepRule = Callable[[Case, int, int, dict[str, Any]], Finding | None]


def _each_step(cls: str, rule: StepRule) -> Rule:
    """A rule applied to each parameter at each step: (case, step, index, observation). A
    step that raised is that step's finding; in the trajectory with parameters without a
    gradient (read by the state check only) the steps before it are judged, and its error
    is the trajectory check's."""
    def per_case(case: Case, observed: dict[str, Any]) -> Finding | None:
        steps = observed["steps"]
        raised = _step_error(cls, case, steps)
        if raised is not None and not _missing_guard_case(case):
            return raised
        for step, record in enumerate(steps):
            if record.get("error"):
                break  # the steps after one that raised did not run
            for index, obs in enumerate(record["params"]):
                if (found := rule(case, step, index, obs)) is not None:
                    return found
        return None

    return per_case


def _class_check(cls: str, rule: StepRule, *, missing_guard: bool = False
                 ) -> Callable[[Evidence], Finding]:
    select = _is_trajectory if missing_guard else _shared_trajectory
    return judge_cases(cls, select, _each_step(cls, rule))


def judge_params_in_place(cls: str) -> Callable[[Evidence], Finding]:
    def rule(case: Case, step: int, index: int, obs: dict[str, Any]) -> Finding | None:
        if obs["state_after"]["ptr"] != obs["state_before"]["ptr"]:
            return fail("storage_replaced", function=f"{cls}.step", tensor=f"params[{index}]",
                        where=phrase("step_case", step=step + 1, case=case["id"]))
        return None

    return _class_check(cls, rule)


@cached_by_content
def _trajectory_start(case: Case) -> tuple[torch.Tensor, ...]:
    return tuple(p.detach() for p in build_params(case, "cpu"))


def _class_computing(cls: str) -> Callable[[Evidence], Iterator[bool | None]]:
    """Whether each parameter at each step of each trajectory shows `cls.step` computing
    (checks/core.computes, from the parameters' first values), lazily: `p.add_(0)` advances
    the version and computes nothing."""
    def verdicts(evidence: Evidence) -> Iterator[bool | None]:
        for case, observed, problem in each_case(evidence, cls, _shared_trajectory):
            if not problem.passed:
                continue
            expected, start = _trajectory(case), _trajectory_start(case)
            for step, record in enumerate(observed.get("steps") or []):
                if record.get("error") or step >= len(expected):
                    break
                for index, obs in enumerate(record["params"][:len(start)]):
                    yield computes(start[index], obs["values"], expected[step][index])

    return verdicts


def judge_version(cls: str) -> Callable[[Evidence], Finding]:
    def rule(case: Case, step: int, index: int, obs: dict[str, Any]) -> Finding | None:
        if not obs["had_grad"]:
            return None
        return version_advanced(f"{cls}.step", f"params[{index}]", obs["state_before"],
                                obs["state_after"], where=phrase("at_step", step=step + 1))

    # See NOTE: [shown to compute] in checks/core.py: the gate of the class names this check.
    return unless_computing(_class_check(cls, rule), _class_computing(cls),
                            function=f"{cls}.step", tensor="params")


def judge_history(cls: str) -> Callable[[Evidence], Finding]:
    def rule(case: Case, step: int, index: int, obs: dict[str, Any]) -> Finding | None:
        return plain_leaf(f"{cls}.step", f"params[{index}]", obs["state_after"])

    return _class_check(cls, rule)


def judge_grad_untouched(cls: str) -> Callable[[Evidence], Finding]:
    def rule(case: Case, step: int, index: int, obs: dict[str, Any]) -> Finding | None:
        if not obs["grad_untouched"]:
            return fail("grad_modified", function=f"{cls}.step", tensor=f"params[{index}].grad",
                        where=phrase("step_config", step=step + 1,
                                     config=_config_text(case["config"])))
        return None

    return _class_check(cls, rule)


def judge_state(cls: str, keys: tuple[str, ...]) -> Callable[[Evidence], Finding]:
    """The state entries exist, keep their identity and memory; Adam counts each
    parameter's own steps (read on the trajectory with parameters without a gradient too,
    where a single shared count shows)."""
    def rule(case: Case, step: int, index: int, obs: dict[str, Any]) -> Finding | None:
        if (cls == "SGD" and not case["config"].get("momentum")) or (
                not obs["had_grad"] and step == 0):
            return None
        state, where = obs["state"], phrase("at_step", step=step + 1)
        if state.get("missing"):
            return fail("state_missing", cls=cls, key=keys[0], where=where)
        for key in keys:
            entry = state.get(key)
            if entry is None:
                return fail("state_missing", cls=cls, key=key, where=where)
            if not entry["same_object"]:
                return fail("state_replaced", cls=cls, key=key, where=where,
                            tensor=f"params[{index}]")
            if not entry["same_ptr"]:
                return fail("state_storage_replaced", cls=cls, key=key, where=where,
                            tensor=f"params[{index}]")
        if cls == "Adam":
            expected_steps = sum(1 for s in range(step + 1)
                                 if [index, s] not in case.get("none_grads", []))
            if state.get("step") != float(expected_steps):
                return fail("state_step", cls=cls, expected=expected_steps,
                            got=state.get("step"), where=where)
        return None

    return _class_check(cls, rule, missing_guard=True)


def judge_validation(cls: str) -> Callable[[Evidence], Finding]:
    def rule(case: Case, observed: dict[str, Any]) -> Finding | None:
        raised = observed.get("raised")
        args = _config_text(case["config"])
        if raised is not None and raised["type"] == "NotImplementedError":
            return fail("not_implemented", function=cls)
        if case["invalid"] and raised is None:
            return fail("validation_missing", cls=cls, args=args)
        if case["invalid"] and raised is not None and "ValueError" not in raised["bases"]:
            return fail("validation_wrong_type", cls=cls, args=args, error_type=raised["type"])
        if not case["invalid"] and raised is not None:
            return fail("validation_spurious", cls=cls, args=args, error_type=raised["type"],
                        error=raised["message"])
        return None

    return judge_cases(cls, lambda c: c["probe"] == "validation", rule)


def judge_optimizer_zero_grad(cls: str) -> Callable[[Evidence], Finding]:
    def rule(case: Case, observed: dict[str, Any]) -> Finding | None:
        if not observed["default_all_none"]:
            return fail("optimizer_zero_grad_default", cls=cls)
        if not observed["kept_and_zeroed"]:
            return fail("optimizer_zero_grad_in_place", cls=cls)
        return None

    return judge_cases(cls, lambda c: c["probe"] == "optimizer_zero_grad", rule)


# --- api and policy --------------------------------------------------------------------------

def config_problem(cls: str, config: dict[str, Any]) -> str | None:
    """Why torch.optim would reject `cls(**config)`, or None: what the validation cases test."""
    lr = config.get("lr", 1e-3)
    if lr < 0:
        return "lr < 0"
    if config.get("weight_decay", 0.0) < 0:
        return "weight_decay < 0"
    if cls == "SGD":
        momentum, dampening = config.get("momentum", 0.0), config.get("dampening", 0.0)
        if momentum < 0:
            return "momentum < 0"
        if config.get("nesterov") and (momentum <= 0 or dampening != 0):
            return "nesterov needs momentum > 0 and dampening 0"
        return None
    betas = config.get("betas", [0.9, 0.999])
    if config.get("eps", 1e-8) < 0:
        return "eps < 0"
    if len(betas) != 2 or not all(0.0 <= beta < 1.0 for beta in betas):
        return "betas must be two numbers in [0, 1)"
    return None


def validate_case(case: Case) -> None:
    """Build what judging `case` needs; raise if the case cannot be graded (hidden cases)."""
    if "config" in case:
        cls = case["class"]
        allowed = {name for name, _ in SIGNATURES[cls][1]} - {"params"}
        unknown = sorted(set(case["config"]) - allowed)
        if unknown:
            raise ValueError(f"{cls} takes no argument {unknown[0]!r}")
        problem = config_problem(cls, case["config"])
        if case["probe"] == "validation" and (problem is not None) != case["invalid"]:
            raise ValueError(f"invalid = {case['invalid']}, but the config is "
                             f"{'invalid: ' + problem if problem else 'valid'}")
        if case["probe"] != "validation" and problem is not None:
            raise ValueError(f"config is invalid ({problem}): a correct {cls} raises")
    params = build_params(case, "cpu")
    if "grads" in case:
        if len(case["grads"]) != len(params):
            raise ValueError("grads: give one kind per shape")
        attach_grads(params, case["grads"], case["seed"])
    if case["probe"] == "sgd_step" and _is_state(case):
        _sgd_step_expected(case)
    if case["probe"] == "trajectory":
        for index, step in case.get("none_grads", []) + case.get("zero_grads", []):
            if not (0 <= index < len(params) and 0 <= step < case["steps"]):
                raise ValueError(f"no parameter {index} at step {step}")
        _trajectory(case)


def judge_no_optim(evidence: Evidence) -> Finding:
    return judge_policy(package=FORBIDDEN_PACKAGE, static=evidence.static_policy,
                        calls=evidence.policy_calls)


def _signature_check(name: str) -> CheckSpec:
    kind, parameters, methods = SIGNATURES[name]
    return CheckSpec(f"{name}.signature", "api",
                     signature_judge(name, kind=kind, parameters=parameters, methods=methods),
                     per_device=False)


# What shows a function did something (any one of them passing): the properties of one that
# does nothing (a no-op keeps every grad object, every storage, and leaves the params
# alone) earn nothing.
ZEROED = ("zero_grad.exact_zeros", "zero_grad.set_to_none")
SGD_STEP_DID = ("sgd_step.values", "sgd_step.version_advances")


def _checks() -> tuple[CheckSpec, ...]:
    checks = [
        _signature_check("zero_grad"),
        CheckSpec("zero_grad.keeps_grad_object", "identity", judge_zero_grad_identity,
                  shown_by=ZEROED),
        CheckSpec("zero_grad.zeroes_own_memory", "storage", judge_zero_grad_storage,
                  shown_by=ZEROED),
        CheckSpec("zero_grad.exact_zeros", "numerics", judge_zero_grad_numerics),
        CheckSpec("zero_grad.detaches_history", "autograd", judge_zero_grad_history),
        CheckSpec("zero_grad.missing_grads_stay_none", "identity", judge_zero_grad_missing,
                  shown_by=ZEROED),
        CheckSpec("zero_grad.set_to_none", "identity", judge_zero_grad_to_none),
        CheckSpec("zero_grad.params_untouched", "side_effect", judge_zero_grad_params,
                  shown_by=ZEROED),
        CheckSpec("zero_grad.edge_grads", "autograd", judge_zero_grad_edges, shown_by=ZEROED),
        _signature_check("sgd_step"),
        CheckSpec("sgd_step.values", "numerics", judge_sgd_step_values),
        CheckSpec("sgd_step.skips_missing_grads", "identity", judge_sgd_step_skips_missing,
                  shown_by=SGD_STEP_DID),
        CheckSpec("sgd_step.same_storage", "storage", judge_sgd_step_storage,
                  shown_by=SGD_STEP_DID),
        CheckSpec("sgd_step.version_advances", "version", judge_sgd_step_version),
        CheckSpec("sgd_step.no_history", "autograd", judge_sgd_step_autograd,
                  shown_by=SGD_STEP_DID),
        CheckSpec("sgd_step.no_full_size_temporary", "allocation", judge_sgd_step_allocation,
                  shown_by=SGD_STEP_DID),
        CheckSpec("sgd_step.grad_untouched", "side_effect", judge_sgd_step_grad,
                  shown_by=SGD_STEP_DID),
    ]
    for cls, configs in (("SGD", [*SGD_CONFIGS, "boundaries"]),
                         ("Adam", [*ADAM_CONFIGS, "boundaries"])):
        did = (f"{cls}.version_advances", *(f"{cls}.trajectory.{name}" for name in configs))
        checks.append(_signature_check(cls))
        checks.append(CheckSpec(f"{cls}.validation", "api", judge_validation(cls),
                                per_device=False))
        checks += [CheckSpec(f"{cls}.trajectory.{name}", "numerics", judge_trajectory(cls, name))
                   for name in configs]
        checks += [
            CheckSpec(f"{cls}.params_in_place", "storage", judge_params_in_place(cls),
                      shown_by=did),
            CheckSpec(f"{cls}.version_advances", "version", judge_version(cls)),
            CheckSpec(f"{cls}.no_history", "autograd", judge_history(cls),
                      shown_by=did),
            CheckSpec(f"{cls}.state_kept", "identity", judge_state(cls, STATE_KEYS[cls])),
            CheckSpec(f"{cls}.grad_untouched", "side_effect", judge_grad_untouched(cls),
                      shown_by=did),
            CheckSpec(f"{cls}.zero_grad", "identity", judge_optimizer_zero_grad(cls)),
        ]
    checks += [CheckSpec(f"{name}.no_torch_optim", "policy", judge_no_optim, per_device=False,
                         policy="torch_optim")
               for name in FUNCTIONS]
    return tuple(checks)


LAB = Lab(
    name="optim",
    filename=FILENAME,
    functions=FUNCTIONS,
    checks=_checks(),
    cases=lab_cases,
    forbidden_package=FORBIDDEN_PACKAGE,
    rubric_path=Path(__file__).with_name("rubric.toml"),
    validate_case=validate_case,
    witnessed=witnessed,
    apply_witness=apply_witness,
    describe_case=describe,
    record_type=record_type,
    reproducer=reproduce.reproducer,
)
