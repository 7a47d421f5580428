"""Reproducers for the autograd lab (grader/labs/reproducers.py): a failing case's tensor built
as inputs.py builds it (a leaf, a view of one, a non-leaf, ...), written out in plain torch,
the student's function called as probes.py calls it, and the property its check judged,
asserted. Expected values and gradients come from the same out-of-place computation the
lab's reference.py does, written out.
"""

from __future__ import annotations

from typing import Any

from grader.checks.evidence import Case
from grader.checks.findings import Finding
from grader.labs.autograd.plan import SIGNATURES
from grader.labs.base import CheckSpec
from grader.labs.reproducers import (
    ERROR_KEYS,
    Assert,
    Close,
    Comment,
    Line,
    Reproducer,
    draw,
    dtype,
    indented,
    kept_alive,
    must_not_raise,
    raises,
    same_values,
    signature,
)


def drawn(shape: list[int] | str, seed: int, case: Case) -> str:
    """inputs.py `draw`: float64 from a seeded generator, cast to the case's dtype."""
    cast = "" if case["dtype"] == "float64" else f".to({dtype(case['dtype'])})"
    if isinstance(shape, str):  # a shape known at run time
        return (f"torch.randn({shape}, generator=torch.Generator().manual_seed({seed}), "
                f"dtype=torch.float64){cast}")
    return f"{draw(shape, seed)}{cast}"


def start(case: Case, t: str = "t", leaf: str = "leaf") -> list[Line]:
    """inputs.py `build_start`: the tensor the function receives, `t`, and the leaf whose
    `.grad` shows the gradient flow, `leaf` (the same tensor for a plain or a leaf case)."""
    kind, shape, seed = case.get("kind", "leaf"), case["shape"], case["seed"]
    if kind == "zero_dim":
        shape = []
    if kind == "transposed":
        return [f"{t} = {drawn(shape[::-1], seed, case)}.t()"]
    source = drawn(shape, seed, case)
    if kind == "plain":
        return [f"{t} = {source}"]
    made = {"view_of_leaf": f"{t} = {leaf}[1:3]", "unbind_view": f"{t} = ({leaf} * 1).unbind(0)[0]",
            "nonleaf": f"{t} = {leaf} * 1.5"}
    if kind == "no_grad_view":
        return [f"{leaf} = {source}.requires_grad_()", "with torch.no_grad():",
                f"    {t} = {leaf}[1:3]"]
    if kind in made:
        return [f"{leaf} = {source}.requires_grad_()", made[kind]]
    if t == leaf:
        return [f"{t} = {source}.requires_grad_()"]
    return [f"{t} = {leaf} = {source}.requires_grad_()"]


def value(case: Case, name: str = "value") -> list[Line]:
    """inputs.py `build_value`: a tensor, a Python float, or a string."""
    kind = case.get("value", "tensor")
    if kind == "float":
        return [f"{name} = 0.75"]
    if kind == "string":
        return [f"{name} = 'one'"]
    shape: list[int] = case["value_shape"] if "value_shape" in case else case["shape"]
    return [f"{name} = {drawn(shape, case['seed'] + 1, case)}"]


def reproducer(check: CheckSpec, case: Case, finding: Finding) -> Reproducer | None:
    function = check.function
    if check.kind == "api" and finding.key.startswith("api_"):
        return signature(function, kind="function", parameters=SIGNATURES[function],
                         methods=(), finding_key=finding.key, finding_params=finding.params)
    build = {"update_leaf_": _update_leaf, "add_or_copy": _add_or_copy,
             "fixed_block": _fixed_block, "snapshot": _copy, "alias": _copy}[function]
    lines = build(check, case, finding)
    return None if lines is None else Reproducer((function,), tuple(lines))


def _expected_add(case: Case, t: str = "t", value: str = "value") -> str:
    """reference.py `expected_add`: `t + value` in float64, cast to the case's dtype."""
    plus = f"{value}.double()" if case.get("value", "tensor") == "tensor" else value
    return f"expected = ({t}.detach().double() + {plus}).to({dtype(case['dtype'])})"


# --- update_leaf_ ----------------------------------------------------------------------------

def _update_leaf(check: CheckSpec, case: Case, finding: Finding) -> list[Line] | None:
    key = finding.key
    lines = [*start(case, t="leaf"), *value(case, "delta")]
    if case.get("has_grad"):
        lines.append(f"leaf.grad = {drawn(case['shape'], case['seed'] + 3, case)}")
    call = "out = update_leaf_(leaf, delta)"
    about = {"function": "update_leaf_", "tensor": "leaf"}
    if key in ERROR_KEYS:
        return [*lines, "", *must_not_raise(call, function="update_leaf_")]
    if key == "not_returned":
        return [*lines, "", call, Assert("out is leaf", "not_returned", about)]
    if key == "storage_replaced":
        return [*lines, "before = leaf.data_ptr()", *kept_alive("leaf"), "", call,
                Assert("leaf.data_ptr() == before", "storage_replaced", about)]
    if key == "writes_elsewhere":
        return [*lines, "alias = leaf.detach()", "", call,
                Assert(same_values("alias", "leaf.detach()"), "writes_elsewhere", about)]
    if key == "version_unchanged":
        return [*lines, "version = leaf._version", "", call,
                Assert("leaf._version > version", "version_unchanged", about)]
    if key == "param_history":
        return [*lines, "", call, Assert("leaf.is_leaf and leaf.requires_grad and leaf.grad_fn "
                                         "is None", "param_history", about)]
    if key == "grad_lost":
        return [*lines, "grad = leaf.grad", "grad_before = None if grad is None else grad.clone()",
                "", call,
                Assert(f"leaf.grad is grad and (grad is None or "
                       f"{same_values('grad', 'grad_before')})", "grad_lost",
                       {**about, "tensor": "leaf.grad"})]
    if key in ("values_mismatch", "shape_mismatch", "write_changes_nothing"):
        return [*lines, _expected_add(case, "leaf", "delta"), "", call,
                Close("leaf.detach()", "expected", case["dtype"],
                      "changes_nothing" if key == "write_changes_nothing" else "sum",
                      {**about, "expression": "leaf + delta"})]
    return None


# --- add_or_copy -------------------------------------------------------------------------------

def _add_or_copy(check: CheckSpec, case: Case, finding: Finding) -> list[Line] | None:
    key, kind = finding.key, case.get("kind", "leaf")
    lines = [*start(case), *value(case)]
    under = kind == "no_grad_leaf"  # the call is made under torch.no_grad()
    call = "result = add_or_copy(t, value)"
    called: list[Line] = ["with torch.no_grad():", f"    {call}"] if under else [call]
    about: dict[str, Any] = {"function": "add_or_copy", "tensor": "t"}
    guarded = must_not_raise(call, function="add_or_copy")
    if key in ERROR_KEYS:
        called = ["with torch.no_grad():", *indented(guarded, 1)] if under else guarded
    if check.id == "add_or_copy.keeps_graph" and key in ("graph_lost", "values_mismatch",
                                                         "shape_mismatch", *ERROR_KEYS):
        return _keeps_graph(case, lines, called, guard=key in ERROR_KEYS)
    if key in ERROR_KEYS:
        return [*lines, "", *called]
    if key == "add_or_copy_return":
        test = ("type(result) is tuple and len(result) == 2 and isinstance(result[0], "
                "torch.Tensor) and isinstance(result[1], bool)")
        return [*lines, "", *called, Assert(test, "pair", about)]
    if key == "add_or_copy_not_in_place":
        return [*lines, "", *called, Assert("result[0] is t and result[1] is True",
                                            "in_place_allowed", about)]
    if key == "add_or_copy_no_fallback":
        return [*lines, "", *called, Assert("result[1] is False and result[0] is not t",
                                            "fallback", about)]
    if key == "version_unchanged":
        return [*lines, "version = t._version", "", *called,
                Assert("t._version > version", "version_unchanged", about)]
    if key == "input_modified":
        return [*lines, "t_before = t.detach().clone()", "version = t._version", "", *called,
                Assert(f"{same_values('t.detach()', 't_before')} and t._version == version",
                       "input_modified", about)]
    if key in ("values_mismatch", "shape_mismatch", "write_changes_nothing") \
            and check.id != "add_or_copy.keeps_graph":
        return [*lines, _expected_add(case), "", *called,
                Close("result[0].detach()", "expected", case["dtype"],
                      "changes_nothing" if key == "write_changes_nothing" else "sum",
                      {"function": "add_or_copy", "tensor": "result[0]",
                       "expression": "t + value"})]
    if key in ("error_swallowed", "error_changed"):
        return [*start(case, t="t_torch", leaf="leaf_torch"), *value(case),
                *raises("t_torch.add_(value)", bound="expected"), "", *start(case),
                *raises("add_or_copy(t, value)"),
                Assert("error is not None and type(error) is type(expected) and "
                       "str(error).splitlines()[:1] == str(expected).splitlines()[:1]",
                       "error_propagates", {"function": "add_or_copy"})]
    return None


def _keeps_graph(case: Case, lines: list[Line], called: list[Line], *, guard: bool
                 ) -> list[Line]:
    """The result carries the gradient back to the leaf `t` came from, as `t + value` does
    (reference.py `expected_leaf_grad`); with `guard`, the call and backward must not raise
    (which of them raised, the finding does not say)."""
    backward = "(result[0] * w).sum().backward()"
    return [
        Comment("reference_add"),
        *start(case, t="t_ref", leaf="leaf_ref"),
        *value(case),
        f"w = {drawn('list(t_ref.shape)', case['seed'] + 2, case)}",
        "((t_ref + value) * w).sum().backward()",
        "",
        *lines, "", *called,
        Assert("result[0].requires_grad", "graph_lost", {"function": "add_or_copy"}),
        *(must_not_raise(backward, function="backward") if guard else [backward]),
        Assert("leaf.grad is not None", "graph_lost", {"function": "add_or_copy"}),
        Close("leaf.grad", "leaf_ref.grad", case["dtype"], "leaf_grad",
              {"function": "add_or_copy"}),
    ]


# --- fixed_block -------------------------------------------------------------------------------

def _fixed_block(check: CheckSpec, case: Case, finding: Finding) -> list[Line] | None:
    key = finding.key
    if case["measure"] == "allocation":
        return None  # a count of full-size tensors kept for backward: the sandbox's tracker
    lines: list[Line] = [
        f"x = {drawn(case['x_shape'], case['seed'], case)}.requires_grad_()",
        f"w = {drawn(case['w_shape'], case['seed'] + 1, case)}.requires_grad_()",
    ]
    about = {"function": "fixed_block"}
    if case["measure"] == "gradcheck":
        if key == "gradcheck_failed":
            return [*lines, "",
                    Assert("torch.autograd.gradcheck(fixed_block, (x, w), raise_exception=False)",
                           "gradcheck", about)]
        if key in ERROR_KEYS:
            return [*lines, "", *must_not_raise("torch.autograd.gradcheck(fixed_block, (x, w))",
                                                function="fixed_block")]
        return None
    if key == "input_modified":
        return [*lines, "x_before, w_before = x.detach().clone(), w.detach().clone()",
                "versions = (x._version, w._version)", "", "fixed_block(x, w)",
                Assert(f"{same_values('x.detach()', 'x_before')} and "
                       f"{same_values('w.detach()', 'w_before')} and "
                       "(x._version, w._version) == versions", "input_modified",
                       {**about, "tensor": "x, w"})]
    if key in ERROR_KEYS and check.id == "fixed_block.backward_runs":
        return [*lines, "", "out = fixed_block(x, w)",
                *must_not_raise("out.sum().backward()", function="backward")]
    if key in ERROR_KEYS:
        return [*lines, "", *must_not_raise("out = fixed_block(x, w)", function="fixed_block")]
    reference: list[Line] = [
        Comment("reference_block"),
        "x64 = x.detach().double().requires_grad_()",
        "w64 = w.detach().double().requires_grad_()",
        "want = ((x64 @ w64).relu().sigmoid() * 2).exp().add(1).sum()",
        "want.backward()",
    ]
    cast = dtype(case["dtype"])
    if key == "block_not_tensor":
        return [*lines, "", "out = fixed_block(x, w)",
                Assert("isinstance(out, torch.Tensor)", "block_tensor", about)]
    tensor = str(finding.params.get("tensor") or finding.params.get("where", ""))
    if key in ("values_mismatch", "shape_mismatch") and tensor == "fixed_block(x, w)":
        return [*lines, *reference, "", "out = fixed_block(x, w)",
                Close("out.detach()", f"want.detach().to({cast})", case["dtype"], "block_value",
                      about)]
    if key in ("values_mismatch", "shape_mismatch", "graph_lost") \
            and tensor in ("x.grad", "w.grad"):
        return [*lines, *reference, "", "out = fixed_block(x, w)", "out.sum().backward()",
                Assert(f"{tensor} is not None", "block_grad", {**about, "tensor": tensor}),
                Close(tensor, f"{tensor[0]}64.grad.to({cast})", case["dtype"], "block_grad",
                      {**about, "tensor": tensor})]
    return None


# --- snapshot and alias ------------------------------------------------------------------------

def _copy(check: CheckSpec, case: Case, finding: Finding) -> list[Line] | None:
    function, key = check.function, finding.key
    lines = [*start(case), "t_before = t.detach().clone()", "version = t._version"]
    call = f"out = {function}(t)"
    about = {"function": function, "tensor": f"{function}(t)"}
    if key in ERROR_KEYS:
        return [*lines, "", *must_not_raise(call, function=function)]
    if key == "not_a_tensor":
        return [*lines, "", call, Assert("isinstance(out, torch.Tensor)", "tensor", about)]
    if key in ("values_mismatch", "shape_mismatch"):
        return [*lines, "", call, Close("out.detach()", "t_before", case["dtype"], "copy_values",
                                        about)]
    if key == "snapshot_shares_memory":
        return [*lines, "", call, "out_before = out.detach().clone()",
                "with torch.no_grad():", "    t.add_(1.0)",
                Assert("out.untyped_storage().data_ptr() != t.untyped_storage().data_ptr() "
                       f"and {same_values('out.detach()', 'out_before')}", "own_memory",
                       about)]
    if key == "autograd_link":
        return [*lines, "", call, Assert("not out.requires_grad and out.grad_fn is None",
                                         "no_link", about)]
    if key == "input_modified":
        same_version = " and t._version == version" if function == "snapshot" else ""
        return [*lines, "", call, Assert(f"{same_values('t.detach()', 't_before')}"
                                         f"{same_version}", "input_modified",
                                         {"function": function, "tensor": "t"})]
    if key == "alias_not_shared":
        return [*lines, "", call,
                Assert("out.data_ptr() == t.data_ptr() and out.untyped_storage().data_ptr() == "
                       "t.untyped_storage().data_ptr()", "alias_memory", about)]
    if key == "alias_version":
        return [*lines, "", call, "versions = (out._version, t._version)",
                "with torch.no_grad():", "    t.add_(0.0)",
                "seen_by_alias = out._version > versions[0]",
                "error = None", "with torch.no_grad():", "    try:", "        out.add_(0.0)",
                "    except Exception as caught:", "        error = caught",
                Assert("seen_by_alias and error is None and t._version > versions[1] + 1",
                       "alias_version", about)]
    return None
