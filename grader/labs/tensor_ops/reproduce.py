"""Reproducers for tensor_ops (grader/labs/reproducers.py): a failing case's inputs built as
inputs.py builds them, written out in plain torch, the student's function called as
probes.py calls it, and the property its check judged, asserted.

The reference a values check compares with is torch's own out-of-place op, in float64 on the
case's inputs and cast to their dtype, as reference.py computes it.
"""

from __future__ import annotations

from grader.checks.evidence import Case
from grader.checks.findings import Finding
from grader.labs.base import CheckSpec
from grader.labs.reproducers import (
    ERROR_KEYS,
    Assert,
    Close,
    Comment,
    Line,
    Reproducer,
    clearly_over,
    draw,
    dtype,
    itemsize,
    kept_alive,
    kwargs_code,
    must_not_raise,
    profiled,
    raises,
    same_values,
    signature,
    traced,
)
from grader.labs.tensor_ops.inputs import HALF, LAYOUTS
from grader.labs.tensor_ops.plan import SIGNATURES

# How the argument is cut from its base (inputs.py `view_of`), as code after `base`.
VIEWS = {"transpose": ".t()", "large_transpose": ".t()", "stride": "[:, ::2]",
         "slice3d": "[:, :, 1:7]"}
# The value checks: the group of cases each reads, all judged on values (judge.py).
VALUE_CHECKS = ("values", "half_precision", "through_views", "edge_shapes", "broadcasts_x")


def first_arg(function: str) -> str:
    return SIGNATURES[function][0][0]


def second_arg(function: str) -> str:
    return {"axpy_": "x", "ema_update_": "new"}.get(function, "")


def inputs(case: Case) -> list[Line]:
    """The case's arguments, named as the function's parameters: its first tensor (a view of
    `base` for the view layouts), and the second tensor of axpy_ and ema_update_."""
    function = case["function"]
    name = first_arg(function)
    shape = case.get("base_shape") or LAYOUTS[case["layout"]]
    view = VIEWS.get(case["layout"], "")
    target = "base" if view else name
    fill = case.get("fill", "normal")
    cast = "" if case["dtype"] == "float64" else f".to({dtype(case['dtype'])})"
    if fill == "normal" or (fill == "extremes" and _numel(shape) < 3) or (
            fill in ("zero_rows", "constant_rows") and len(shape) != 2):
        lines: list[Line] = [f"{target} = {draw(shape, case['seed'])}{cast}"]
    else:
        lines = [f"{target} = {draw(shape, case['seed'])}"]
    if fill == "extremes" and _numel(shape) >= 3:
        lines.append(f"{target}.view(-1)[:3] = torch.tensor([float('inf'), float('-inf'), "
                     "float('nan')], dtype=torch.float64)")
    elif fill == "large":
        lines.append(f"{target} = {target} * {1e3 if case['dtype'] in HALF else 1e4}")
    elif fill == "zero_rows" and len(shape) == 2:
        lines += [f"{target}[0] = 0.0", f"{target}[:, 0] = 0.0"]
    elif fill == "constant_rows" and len(shape) == 2:
        lines += [f"{target}[0] = 3.0", f"{target}[:, 0] = -2.0"]
    if len(lines) > 1 and cast:
        lines.append(f"{target} = {target}{cast}")
    if view:
        lines.append(f"{name} = base{view}")
    other = second_arg(function)
    if other and "other_shape" in case:
        lines.append(f"{other} = {draw(case['other_shape'], case['seed'] + 1)}{cast}")
    return lines


def _numel(shape: list[int]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


def call(case: Case, *, x: str | None = None, other: str | None = None) -> str:
    """The call probes.py makes: the case's positional arguments, then its keywords."""
    function = case["function"]
    names = {"X": x or first_arg(function), "OTHER": other or second_arg(function)}
    args = [names[arg] if isinstance(arg, str) else repr(arg) for arg in case["args"]]
    return f"{function}({', '.join(args)}{kwargs_code(case.get('kwargs', {}))})"


def reference(case: Case, x: str, other: str) -> list[str]:
    """Lines that leave in `want` torch's out-of-place result for `x` (float64 code), the
    second tensor being `other`; reference.py's REFERENCES."""
    function, kwargs = case["function"], case.get("kwargs", {})
    args = case["args"]
    if function == "relu_":
        return [f"want = torch.relu({x})"]
    if function == "clamp_":
        return [f"want = torch.clamp({x}, min={kwargs.get('lo')!r}, max={kwargs.get('hi')!r})"]
    if function == "axpy_":
        return [f"want = {x} + {args[1]!r} * {other}"]
    if function == "ema_update_":
        decay = args[2]
        return [f"want = {decay!r} * {x} + (1 - {decay!r}) * {other}"]
    if function == "normalize_":
        return [f"want = torch.nn.functional.normalize({x}, p=2.0, dim={kwargs.get('dim', -1)}, "
                f"eps={kwargs.get('eps', 1e-12)!r})"]
    if function == "standardize_":
        dim, eps = kwargs.get("dim", -1), kwargs.get("eps", 1e-5)
        return [f"var, mean = torch.var_mean({x}, dim={dim}, keepdim=True, correction=0)",
                f"want = ({x} - mean) / torch.sqrt(var + {eps!r})"]
    return [f"want = torch.softmax({x}, dim={kwargs.get('dim', -1)})"]


def expected(case: Case) -> list[Line]:
    """`expected`: what the caller's memory must hold after the call (the base, for a view:
    its other elements unchanged), computed before the call from copies."""
    function = case["function"]
    other = second_arg(function)
    other64 = f"{other}.double()" if other and "other_shape" in case else ""
    view = VIEWS.get(case["layout"], "")
    if not view:
        return [*reference(case, f"{first_arg(function)}.double()", other64),
                f"expected = want.to({dtype(case['dtype'])})"]
    return ["expected = base.clone().double()", f"view = expected{view}",
            *reference(case, "view", other64), "view.copy_(want)",
            f"expected = expected.to({dtype(case['dtype'])})"]


def reproducer(check: CheckSpec, case: Case, finding: Finding) -> Reproducer | None:
    function = case["function"]
    names = (function,)
    if check.kind == "api" and finding.key.startswith("api_"):
        return signature(function, kind="function", parameters=SIGNATURES[function],
                         methods=(), finding_key=finding.key, finding_params=finding.params)
    if case["measure"] == "allocation":
        lines = _allocation(case, finding)
    elif case["measure"] == "rejects":
        lines = _rejects(case, finding)
    elif case["measure"] == "autograd":
        lines = _autograd(case, finding)
    else:
        lines = _state(check, case, finding)
    return None if lines is None else Reproducer(names, tuple(lines))


def _state(check: CheckSpec, case: Case, finding: Finding) -> list[Line] | None:
    function, key = case["function"], finding.key
    x, other = first_arg(function), second_arg(function)
    lines = inputs(case)
    if key in ERROR_KEYS:
        return [*lines, "", *must_not_raise(call(case), function=function)]
    suffix = check.id.split(".", 1)[1]
    about = {"function": function, "tensor": x}
    if key == "not_returned":
        return [*lines, "", f"out = {call(case)}", Assert(f"out is {x}", "not_returned", about)]
    if key == "storage_replaced":
        return [*lines, "", f"before = {x}.data_ptr()", *kept_alive(x), call(case),
                Assert(f"{x}.data_ptr() == before", "storage_replaced", about)]
    if key == "writes_elsewhere":
        return [*lines, "", f"alias = {x}.detach()", call(case),
                Assert(same_values("alias", x), "writes_elsewhere", about)]
    if key == "version_unchanged":
        return [*lines, "", f"version = {x}._version", call(case),
                Assert(f"{x}._version > version", "version_unchanged", about)]
    if key == "input_modified" and other:
        return [*lines, "", f"{other}_before = {other}.clone()",
                f"version = {other}._version", call(case),
                Assert(f"{same_values(other, f'{other}_before')} and "
                       f"{other}._version == version", "input_modified",
                       {"function": function, "tensor": other})]
    if key in ("values_mismatch", "shape_mismatch", "not_written", "write_changes_nothing") \
            and (suffix in VALUE_CHECKS or key == "write_changes_nothing"):
        memory = "base" if case["layout"] in VIEWS else x
        return [*lines, "", *expected(case), call(case),
                Close(memory, "expected", case["dtype"],
                      "changes_nothing" if key == "write_changes_nothing" else "values",
                      {**about, "tensor": memory})]
    return None


def _allocation(case: Case, finding: Finding) -> list[Line] | None:
    function = case["function"]
    x = first_arg(function)
    if finding.key in ERROR_KEYS:
        return [*inputs(case), "", *must_not_raise(call(case), function=function)]
    if finding.key in ("full_size_temporary", "kernel_temporary"):
        return [*inputs(case), *profiled([call(case)], tensor=x, function=function)]
    if finding.key == "host_temporary" and clearly_over(finding, _numel(
            case.get("base_shape") or LAYOUTS[case["layout"]]) * itemsize(case["dtype"])):
        return [*inputs(case), *traced([call(case)], tensor=x, function=function)]
    return None  # a module-level buffer, or a peak only the sandbox's outside meter saw


def _rejects(case: Case, finding: Finding) -> list[Line] | None:
    function = case["function"]
    x = first_arg(function)
    lines = inputs(case)
    if finding.key in ("clamp_accepts_no_bounds", "axpy_accepts_wider_x"):
        return [*lines, "", *raises(call(case)),
                Assert("error is not None", "must_raise", {"function": function,
                                                           "call": call(case)})]
    if finding.key == "input_modified":
        return [*lines, "", f"{x}_before = {x}.clone()", *raises(call(case)),
                Assert(same_values(x, f"{x}_before"), "input_modified",
                       {"function": function, "tensor": x})]
    return None


def weights(x: str) -> str:
    """The loss weights of the autograd case (inputs.py `loss_weights`), for tensor `x`."""
    return f"torch.linspace(-1.0, 2.0, {x}.numel(), dtype={x}.dtype).reshape({x}.shape)"


# Errors at backward that mean autograd saw the write, or refused loudly (judge.py
# SEEN_WRITE_ERRORS, UNDIFFERENTIABLE, REFUSED_WRITES).
LOUD = ("modified by an inplace operation", "is not implemented",
        "don't support automatic differentiation", "does not support it",
        "leaf Variable that requires grad", "is being modified inplace",
        "Inplace update to inference tensor")


def _autograd(case: Case, finding: Finding) -> list[Line] | None:
    """The autograd case (probes.probe_autograd): float64, `x` a non-leaf that requires grad.
    Backward must raise autograd's error or give the true gradient; forward-mode AD must
    carry the true tangent."""
    function = case["function"]
    x, other = first_arg(function), second_arg(function)
    has_other = bool(other) and "other_shape" in case
    if finding.key in ERROR_KEYS:
        return [*inputs(case), "", f"{x} = {x}.requires_grad_() * 1.0",
                *([f"{other} = {other}.requires_grad_() * 1.0"] if has_other else []),
                *must_not_raise(call(case), function=function)]
    about = {"function": function, "tensor": x}
    if finding.key in ("write_unseen_by_autograd", "backward_lost_write"):
        leaves = [x, *([other] if has_other else [])]
        lines: list[Line] = [*inputs(case), f"w = {weights(x)}", "",
                             Comment("reference_gradient")]
        lines += [f"{name}_ref = {name}.clone().requires_grad_()" for name in leaves]
        lines += reference(case, f"({x}_ref * 1.0)", f"({other}_ref * 1.0)" if has_other else "")
        lines += ["(want * w).sum().backward()", ""]
        lines += [f"{name}_leaf = {name}.clone().requires_grad_()" for name in leaves]
        lines.append(f"{x}_in = {x}_leaf * 1.0")
        if has_other:
            lines.append(f"{other}_in = {other}_leaf * 1.0")
        lines += [call(case, x=f"{x}_in", other=f"{other}_in"),
                  *raises(f"({x}_in * w).sum().backward()", error="RuntimeError")]
        lines += [Comment("seen_or_right"),
                  f"loud = {LOUD!r}",
                  "seen = error is not None and any(words in str(error) for words in loud)",
                  "right = error is None and " + " and ".join(
                      f"{name}_leaf.grad is not None and torch.allclose({name}_leaf.grad, "
                      f"{name}_ref.grad, equal_nan=True)" for name in leaves),
                  Assert("seen or right", "autograd_backward", about)]
        return lines
    if finding.key == "write_unseen_forward":
        names = [x, *([other] if has_other else [])]
        lines = [*inputs(case), "import torch.autograd.forward_ad as fwAD",
                 *[f"{name}_tangent = {weights(name)}" for name in names], ""]
        duals = [(name, f"{name}_tangent") for name in names]
        lines += ["with fwAD.dual_level():"]
        lines += [f"    {name}_ref = fwAD.make_dual({name}.clone(), {w})" for name, w in duals]
        lines += ["    " + line for line in reference(
            case, f"{x}_ref", f"{other}_ref" if has_other else "")]
        lines += ["    want = fwAD.unpack_dual(want).tangent"]
        lines += ["with fwAD.dual_level():"]
        lines += [f"    {name}_in = fwAD.make_dual({name}.clone(), {w})" for name, w in duals]
        lines += [f"    {call(case, x=f'{x}_in', other=f'{other}_in')}",
                  f"    tangent = fwAD.unpack_dual({x}_in).tangent"]
        lines += [Assert("tangent is not None and torch.allclose(tangent, want, "
                         "equal_nan=True)", "autograd_forward", about)]
        return lines
    return None
