"""Reproducers for the optim lab (grader/labs/reproducers.py): a failing case's parameters and
gradients built as inputs.py builds them, written out in plain torch, the student's function
or optimizer called as probes.py calls it, and the property its check judged, asserted.

An optimizer's trajectory is compared step by step with torch.optim's own optimizer run in
float64 on the same parameters and gradients (what reference.py writes out, and
tests/labs/test_optim_reference.py holds to torch.optim).
"""

from __future__ import annotations

import math
from typing import Any

from grader.checks.evidence import Case
from grader.checks.findings import Finding
from grader.labs.base import CheckSpec
from grader.labs.optim.plan import SIGNATURES, STATE_KEYS
from grader.labs.reproducers import (
    ERROR_KEYS,
    Assert,
    Close,
    Line,
    Reproducer,
    Runtime,
    clearly_over,
    draw,
    dtype,
    indented,
    itemsize,
    kept_alive,
    must_not_raise,
    profiled,
    same_values,
    signature,
    traced,
)


def params_lines(case: Case) -> list[Line]:
    """The case's parameters: leaves that require grad, drawn one after another from one
    generator seeded by the case (inputs.py `build_params`)."""
    cast = "" if case["dtype"] == "float64" else f".to({dtype(case['dtype'])})"
    return [f"g = torch.Generator().manual_seed({case['seed']})",
            f"params = [torch.randn(shape, generator=g, dtype=torch.float64){cast}"
            f".requires_grad_() for shape in {case['shapes']}]"]


def grad_lines(case: Case) -> list[Line]:
    """Each parameter's gradient of the kind the case gives it (inputs.py `build_grad`)."""
    lines: list[Line] = []
    for index, (shape, kind) in enumerate(zip(case["shapes"], case["grads"], strict=True)):
        target = f"params[{index}].grad"
        if kind == "none":
            continue
        drawn = (f"{draw(shape, case['seed'] * 1000 + index)}"
                 f".to(params[{index}].dtype)")
        if kind == "normal":
            lines.append(f"{target} = {drawn}")
        elif kind == "noncontig":
            strides = [2] if len(shape) == 1 else [math.prod(shape[:i]) for i in range(len(shape))]
            lines.append(f"{target} = torch.empty_strided({shape}, {strides}, "
                         f"dtype=params[{index}].dtype).copy_({drawn})")
        elif kind == "inf_nan":
            lines += [f"grad = {drawn}", "grad.view(-1)[0] = float('inf')",
                      "grad.view(-1)[-1] = float('nan')"]
            if math.prod(shape) > 2:
                lines.append("grad.view(-1)[1] = float('-inf')")
            lines.append(f"{target} = grad")
        elif kind == "grad_fn":  # a create_graph gradient: a non-leaf with history
            lines.append(f"{target} = (params[{index}].detach().requires_grad_() * {drawn})"
                         ".mul(2.0)")
        elif kind == "view":  # a view without history, as a gradient bucket hands out
            lines += [f"bucket = torch.zeros({[2, *shape]}, dtype=params[{index}].dtype)",
                      f"{target} = bucket[1].copy_({drawn})"]
        elif kind == "leaf":  # a gradient that is itself a leaf requiring grad
            lines.append(f"{target} = {drawn}.requires_grad_()")
    return lines


def iterable(case: Case) -> str:
    return "(p for p in params)" if case.get("iterable") == "generator" else "params"


def reproducer(check: CheckSpec, case: Case, finding: Finding) -> Reproducer | None:
    if check.kind == "api" and finding.key.startswith("api_"):
        kind, parameters, methods = SIGNATURES[check.function]
        return signature(check.function, kind=kind, parameters=parameters, methods=methods,
                         finding_key=finding.key, finding_params=finding.params)
    builders = {"zero_grad": _zero_grad, "sgd_step": _sgd_step, "trajectory": _trajectory,
                "validation": _validation, "optimizer_zero_grad": _optimizer_zero_grad}
    built = builders[case["probe"]](check, case, finding)
    return None if built is None else Reproducer((check.function,), tuple(built))


def _each(test: str, key: str, params: dict[str, Any], *, only: list[int] | None = None,
          skip: str = "") -> list[Line]:
    """`test` asserted for each parameter `p` (its index `i`): those of `only` where given,
    unless `skip` holds."""
    lines: list[Line] = (["for i, p in enumerate(params):"] if only is None
                         else [f"for i in {only}:", "    p = params[i]"])
    if skip:
        lines += [f"    if {skip}:", "        continue"]
    return [*lines, Assert(test, key, params, indent=1)]


def _with(case: Case, wanted: bool) -> list[int] | None:
    """The parameters with a gradient (`wanted`), or without one; None where that is all."""
    chosen = [i for i, kind in enumerate(case["grads"]) if (kind != "none") == wanted]
    return None if len(chosen) == len(case["grads"]) else chosen


def _param(index: str = "i", suffix: str = "") -> Runtime:
    """`params[<i>]`, the parameter named at run time."""
    return Runtime(index, around="params[{}]" + suffix)


# --- zero_grad ---------------------------------------------------------------------------

def _zero_grad(check: CheckSpec, case: Case, finding: Finding) -> list[Line] | None:
    key = finding.key
    setting = case.get("set_to_none")
    call = f"zero_grad({iterable(case)}{'' if setting is None else f', set_to_none={setting}'})"
    lines = [*params_lines(case), *grad_lines(case), "grads = [p.grad for p in params]"]
    kinds = case["grads"]
    about = {"function": "zero_grad"}
    if key in ERROR_KEYS:
        return [*lines, "", *must_not_raise(call, function="zero_grad")]
    if key == "grad_replaced":
        return [*lines, "", call, *_each("p.grad is grads[i]", "grad_replaced",
                                         {**about, "tensor": _param(suffix=".grad")},
                                         skip="grads[i] is None")]
    if key == "memory_not_zeroed":
        return [*lines, "aliases = [None if g is None else g.detach() for g in grads]", "", call,
                *_each("(aliases[i] == 0).all()", "memory_not_zeroed",
                       {**about, "tensor": _param(suffix=".grad")}, skip="aliases[i] is None")]
    if key == "values_mismatch":
        wanted = [i for i, kind in enumerate(kinds) if kind != "none"
                  and (check.id != "zero_grad.edge_grads" or kind in ("view", "leaf"))]
        return [*lines, "", call, f"for i in {wanted}:",
                "    if params[i].grad is not None:",
                Close("params[i].grad", "torch.zeros_like(params[i].grad)", case["dtype"],
                      "zeros", {**about, "tensor": _param(suffix=".grad")}, indent=2)]
    if key == "grad_keeps_history":
        wanted = [i for i, kind in enumerate(kinds) if kind == "grad_fn"]
        return [*lines, "", call, f"for i in {wanted}:",
                Assert("params[i].grad is None or (params[i].grad.grad_fn is None and not "
                       "params[i].grad.requires_grad)", "grad_keeps_history",
                       {**about, "tensor": _param(suffix=".grad")}, indent=1)]
    if key in ("grad_created", "grad_not_none"):
        wanted = [i for i, kind in enumerate(kinds) if kind == "none" or key == "grad_not_none"]
        return [*lines, "", call, f"for i in {wanted}:",
                Assert("params[i].grad is None", key, {**about, "tensor": _param(
                    suffix=".grad")}, indent=1)]
    if key == "param_changed":
        return [*lines, "before = [p.detach().clone() for p in params]",
                "versions = [p._version for p in params]", "", call,
                *_each(f"{same_values('p.detach()', 'before[i]')} and p._version == "
                       "versions[i]", "input_modified",
                       {**about, "tensor": _param()})]
    return None


# --- sgd_step ----------------------------------------------------------------------------

def _sgd_step(check: CheckSpec, case: Case, finding: Finding) -> list[Line] | None:
    key, lr = finding.key, case["lr"]
    call = f"sgd_step({iterable(case)}, {lr!r})"
    lines = [*params_lines(case), *grad_lines(case)]
    about = {"function": "sgd_step", "tensor": _param()}
    if key in ERROR_KEYS:
        return [*lines, "", *must_not_raise(call, function="sgd_step")]
    if case.get("measure") == "allocation":
        if key in ("full_size_temporary", "kernel_temporary"):
            return [*lines, *profiled([call], tensor="params[0]", function="sgd_step")]
        if key == "host_temporary" and clearly_over(finding, math.prod(case["shapes"][0])
                                               * itemsize(case["dtype"])):
            return [*lines, *traced([call], tensor="params[0]", function="sgd_step")]
        return None
    if key in ("values_mismatch", "shape_mismatch", "not_written", "write_changes_nothing"):
        return [*lines,
                f"expected = [p.detach().double() - {lr!r} * p.grad.double() if p.grad is not "
                "None else p.detach().clone().double() for p in params]", "", call,
                "for i, p in enumerate(params):",
                Close("p.detach()", "expected[i].to(p.dtype)", case["dtype"],
                      "changes_nothing" if key == "write_changes_nothing" else "sgd_values",
                      {**about, "lr": lr}, indent=1)]
    if key == "missing_grad_touched":
        return [*lines, "before = [p.detach().clone() for p in params]", "", call,
                *_each(f"p.grad is None and {same_values('p.detach()', 'before[i]')}",
                       "missing_grad_touched", about,
                       only=_with(case, False))]
    if key == "storage_replaced":
        return [*lines, "before = [p.data_ptr() for p in params]", *kept_alive("params"), "",
                call,
                *_each("p.data_ptr() == before[i]", "storage_replaced", about)]
    if key == "writes_elsewhere":
        return [*lines, "aliases = [p.detach() for p in params]", "", call,
                *_each(same_values("aliases[i]", "p.detach()"), "writes_elsewhere", about)]
    if key == "version_unchanged":
        return [*lines, "versions = [p._version for p in params]", "", call,
                *_each("p._version > versions[i]", "version_unchanged", about,
                       only=_with(case, True))]
    if key == "param_history":
        return [*lines, "", call,
                *_each("p.is_leaf and p.requires_grad and p.grad_fn is None", "param_history",
                       about)]
    if key == "grad_modified":
        return [*lines, "grads = [p.grad for p in params]",
                "before = [None if g is None else g.clone() for g in grads]",
                "versions = [None if g is None else g._version for g in grads]", "", call,
                *_each(f"p.grad is grads[i] and {same_values('p.grad', 'before[i]')} and "
                       "p.grad._version == versions[i]", "grad_modified",
                       {"function": "sgd_step", "tensor": _param(suffix=".grad")},
                       only=_with(case, True))]
    return None


# --- SGD and Adam ------------------------------------------------------------------------

def _refill(case: Case, *, compare: bool) -> list[Line]:
    """The step's gradients (inputs.py `step_grads`), written into the tensors of the step
    before as backward accumulates into the `.grad` it keeps (probes.py `_refill`); with
    `compare`, the reference optimizer's parameters get the same, in float64."""
    lines: list[Line] = ["    for i, p in enumerate(params):",
                         f"        fresh = torch.randn(p.shape, generator=torch.Generator()"
                         f".manual_seed({case['seed']} * 7919 + step * 97 + i), "
                         "dtype=torch.float64).to(p.dtype)"]
    if case.get("zero_grads"):
        lines += [f"        if [i, step] in {case['zero_grads']}:",
                  "            fresh = torch.zeros_like(fresh)"]
    elif "grad_scale" in case:
        lines.append(f"        fresh = fresh * {case['grad_scale']!r}")
    missing = bool(case.get("none_grads"))
    if missing:
        lines += [f"        if [i, step] in {case['none_grads']}:", "            fresh = None"]
    lines += [f"        if {'fresh is None or ' if missing else ''}grads[i] is None:",
              "            grads[i] = fresh",
              "        else:",
              "            with torch.no_grad():",
              "                grads[i].copy_(fresh)",
              "        p.grad = grads[i]"]
    if compare:
        lines.append("        reference[i].grad = "
                     + ("None if fresh is None else fresh.double()" if missing
                        else "fresh.double()"))
    return lines


def _config(config: dict[str, Any]) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in config.items())


def _trajectory(check: CheckSpec, case: Case, finding: Finding) -> list[Line] | None:
    cls, key = case["class"], finding.key
    config = _config(case["config"])
    build = f"optimizer = {cls}({iterable(case)}, {config})"
    step = "optimizer.step()"
    setup: list[Line] = []
    before: list[Line] = []
    after: list[Line] = []
    at_step = Runtime("step + 1")
    if key in ERROR_KEYS:
        build_lines: list[Line] = must_not_raise(build, function=cls)
        step_lines: list[Line] = must_not_raise(step, function=f"{cls}.step")
    else:
        build_lines, step_lines = [build], [step]
    about = {"function": f"{cls}.step", "tensor": _param(), "step": at_step}
    if key in ERROR_KEYS:
        pass
    elif key == "trajectory_mismatch":
        after = ["for i, p in enumerate(params):",
                 Close("p.detach()", "reference[i].detach().to(p.dtype)", case["dtype"],
                       "trajectory", {"cls": cls, "tensor": _param(), "step": at_step},
                       indent=1)]
    elif key == "storage_replaced":
        before = ["before = [p.data_ptr() for p in params]", *kept_alive("params")]
        after = _each("p.data_ptr() == before[i]", "storage_replaced_at", about)
    elif key == "write_changes_nothing":  # versions move, values do not
        after = ["for i, p in enumerate(params):",
                 Close("p.detach()", "reference[i].detach().to(p.dtype)", case["dtype"],
                       "trajectory", {"cls": cls, "tensor": _param(), "step": at_step},
                       indent=1)]
    elif key == "version_unchanged":
        before = ["versions = [p._version for p in params]"]
        after = _each("p._version > versions[i]", "version_unchanged_at", about,
                      skip="grads[i] is None")
    elif key == "param_history":
        after = _each("p.is_leaf and p.requires_grad and p.grad_fn is None",
                      "param_history_at", about)
    elif key == "grad_modified":
        before = ["kept = [p.grad for p in params]",
                  "values = [None if g is None else g.clone() for g in kept]",
                  "versions = [None if g is None else g._version for g in kept]"]
        after = _each(f"p.grad is kept[i] and {same_values('p.grad', 'values[i]')} and "
                      "p.grad._version == versions[i]", "grad_modified_at",
                      {**about, "tensor": _param(suffix=".grad")}, skip="kept[i] is None")
    elif key in ("state_missing", "state_replaced", "state_storage_replaced", "state_step"):
        setup, after = _state_checks(cls, case)
    else:
        return None
    compare = key in ("trajectory_mismatch", "write_changes_nothing")
    reference: list[Line] = [
        "reference = [p.detach().clone().double().requires_grad_() for p in params]",
        f"expected = torch.optim.{cls}(reference, {config})"] if compare else []
    return [
        *params_lines(case),
        *reference,
        *build_lines,
        "grads = [None] * len(params)",
        *setup,
        "",
        f"for step in range({case['steps']}):",
        *_refill(case, compare=compare),
        *indented(before, 1),
        *indented(step_lines, 1),
        *(["    expected.step()"] if compare else []),
        *indented(after, 1),
    ]


def _state_checks(cls: str, case: Case) -> tuple[list[Line], list[Line]]:
    """The state entries of each parameter after a step (judge.py `judge_state`): there,
    the same tensor in the same memory from the step torch's optimizer keeps them from (the
    second for SGD, whose first clones the gradient), and Adam's own count of steps. Lines
    before the loop over steps, and in it."""
    if cls == "SGD" and not case["config"].get("momentum"):
        return [], []
    first = 1 if cls == "SGD" else 0
    about = {"cls": cls, "step": Runtime("step + 1"), "tensor": _param()}
    setup: list[Line] = ["kept = {}", *(["counts = [0] * len(params)"] if cls == "Adam" else [])]
    lines: list[Line] = [
        "for i, p in enumerate(params):",
        "    if grads[i] is None and step == 0:",
        "        continue",
        "    state = getattr(optimizer, 'state', {})",
        Assert("isinstance(state.get(p), dict)", "state_missing", {**about, "key": "state[p]"},
               indent=1),
        f"    for key in {list(STATE_KEYS[cls])}:",
        "        entry = state[p].get(key)",
        Assert("isinstance(entry, torch.Tensor)", "state_missing",
               {**about, "key": Runtime("key")}, indent=2),
        f"        if step == {first}:",
        "            kept[i, key] = (entry, entry.data_ptr())",
        "        if (i, key) in kept:",
        Assert("entry is kept[i, key][0]", "state_replaced", {**about, "key": Runtime("key")},
               indent=3),
        Assert("entry.data_ptr() == kept[i, key][1]", "state_storage_replaced",
               {**about, "key": Runtime("key")}, indent=3),
    ]
    if cls == "Adam":
        lines += [
            "    counts[i] += grads[i] is not None",
            Assert("float(state[p]['step']) == counts[i]", "state_step",
                   {**about, "count": Runtime("counts[i]")}, indent=1),
        ]
    return setup, lines


def _validation(check: CheckSpec, case: Case, finding: Finding) -> list[Line] | None:
    cls, key = case["class"], finding.key
    call = f"{cls}(params, {_config(case['config'])})"
    lines = [*params_lines(case), "error = None", "try:", f"    {call}",
             "except Exception as caught:", "    error = caught"]
    about = {"cls": cls, "call": call}
    if key in ("validation_missing", "validation_wrong_type"):
        return [*lines, Assert("isinstance(error, ValueError)", "validation_missing", about)]
    if key == "validation_spurious":
        return [*lines, Assert("error is None", "validation_spurious", about)]
    return None


def _optimizer_zero_grad(check: CheckSpec, case: Case, finding: Finding) -> list[Line] | None:
    cls, key = case["class"], finding.key
    grads = [f"params[{index}].grad = {draw(shape, case['seed'] * 1000 + index)}"
             f".to(params[{index}].dtype)" for index, shape in enumerate(case["shapes"])]
    lines: list[Line] = [*params_lines(case),
                         f"optimizer = {cls}(list(params), {_config(case['config'])})", *grads]
    if key == "optimizer_zero_grad_default":
        return [*lines, "optimizer.zero_grad()",
                Assert("all(p.grad is None for p in params)", "zero_grad_default",
                       {"cls": cls})]
    if key == "optimizer_zero_grad_in_place":
        return [*lines, "kept = [p.grad for p in params]",
                "optimizer.zero_grad(set_to_none=False)",
                Assert("all(p.grad is g and (g == 0).all() for p, g in zip(params, kept))",
                       "zero_grad_in_place", {"cls": cls})]
    if key in ERROR_KEYS:
        return [*lines, *must_not_raise("optimizer.zero_grad()", function=f"{cls}.zero_grad")]
    return None
