"""Reproducers for the modules lab (grader/labs/reproducers.py): a failing case's models and
tensors built as inputs.py builds them (every value drawn from the case's seed, module init's
own draws overwritten), written out in plain torch, the student's function called as probes.py
calls it, and the property its check judged, asserted.

A model's entries are judged one by one in state-dict order, as judge.py does; the values a
function must leave are reference.py's: the state dict's own (load_state_), the average in
float64 (ema_update_model_), and torch's own `nn.BatchNorm1d` run in float64 on the same
batches (batchnorm_update_).
"""

from __future__ import annotations

from typing import Any

from grader.checks.evidence import Case
from grader.checks.findings import Finding
from grader.labs.base import CheckSpec
from grader.labs.modules.inputs import INTEGER_KEYS, LR, MLP_PARAMETERS, MLP_SHAPES
from grader.labs.modules.plan import SIGNATURES
from grader.labs.reproducers import (
    ERROR_KEYS,
    Assert,
    Close,
    Comment,
    Line,
    Reproducer,
    Runtime,
    clearly_over,
    draw,
    dtype,
    indented,
    itemsize,
    must_not_raise,
    profiled,
    raises,
    same_values,
    signature,
)

COUNT = INTEGER_KEYS[0]


def reproducer(check: CheckSpec, case: Case, finding: Finding) -> Reproducer | None:
    function = check.function
    if check.kind == "api" and finding.key.startswith("api_"):
        return signature(function, kind="function", parameters=SIGNATURES[function],
                         methods=(), finding_key=finding.key, finding_params=finding.params)
    builders = {"load_state_": _load_state, "tie_weights_": _tie_weights,
                "ema_update_model_": _ema, "batchnorm_update_": _batchnorm}
    built = builders[function](check, case, finding)
    return None if built is None else Reproducer((function,), tuple(built))


def _cast(name: str) -> str:
    """`.to(<dtype>)` where the case's dtype is not float64's draw."""
    return "" if name == "float64" else f".to({dtype(name)})"


# --- the mlp (inputs.py `mlp_values`, `build_mlp`) ----------------------------------------------

def mlp_lines() -> list[Line]:
    """`mlp_values(seed, dtype)`, the values of an mlp state dict drawn from a seed, and
    `mlp(seed, dtype)`, the model holding them."""
    return [
        f"shapes = {MLP_SHAPES!r}",
        "",
        "",
        "def mlp_values(seed, dtype):",
        "    values = {}",
        "    for index, (key, shape) in enumerate(shapes.items()):",
        f"        if key == {COUNT!r}:",
        "            values[key] = torch.tensor(seed % 7 + 2, dtype=torch.long)",
        "        else:",
        "            g = torch.Generator().manual_seed(seed * 100 + index)",
        "            values[key] = torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)",
        "    values['1.running_var'] = values['1.running_var'].abs() + 0.5",
        "    return values",
        "",
        "",
        "def mlp(seed, dtype):",
        "    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.BatchNorm1d(5),",
        "                                torch.nn.Linear(5, 3)).to(dtype)",
        "    own = model.state_dict(keep_vars=True)",
        "    with torch.no_grad():",
        "        for key, value in mlp_values(seed, dtype).items():",
        "            own[key].copy_(value)",
        "    return model",
        "",
        "",
    ]


def _entries(key: str, *, function: str, module: str, call: str, setup: list[Line],
             want: list[Line], message: tuple[str, dict[str, Any]], dtype_name: str
             ) -> list[Line] | None:
    """The checks of a model's entries (judge.py `_kept`, `_same_memory`, `_versions`,
    `_values`, `_no_history`): each entry held before the call (`held`), judged in order
    against what the model holds under its name after it (`now`)."""
    about = {"function": function, "tensor": Runtime("key")}
    held = f"held = {module}.state_dict(keep_vars=True)"
    now = f"now = {module}.state_dict(keep_vars=True)"
    each = ["for key, tensor in held.items():", "    t = now.get(key, tensor)"]
    if key in ERROR_KEYS:
        return [*setup, *must_not_raise(call, function=function)]
    if key == "not_returned":
        return [*setup, f"out = {call}", Assert(f"out is {module}", "returns_object",
                                                {"function": function, "name": module})]
    if key == "module_entry_replaced":
        return [*setup, held, call, now, "for key, tensor in held.items():",
                Assert("now.get(key) is tensor", "entry_replaced", about, indent=1)]
    if key == "storage_replaced":
        return [*setup, held, "before = {key: t.data_ptr() for key, t in held.items()}",
                Comment("kept_alive"), "aliases = [t.detach() for t in held.values()]",
                call, now, *each,
                Assert("t.data_ptr() == before[key]", "storage_replaced", about, indent=1)]
    if key == "version_unchanged":
        return [*setup, held, "versions = {key: t._version for key, t in held.items()}",
                call, now, *each,
                Assert("t._version > versions[key]", "version_unchanged", about, indent=1)]
    if key == "param_history":
        return [*setup, held, call, now, f"parameters = {list(MLP_PARAMETERS)!r}", *each,
                Assert("t.grad_fn is None and (key not in parameters or (t.is_leaf and "
                       "t.requires_grad))", "entry_history", about, indent=1)]
    if key in ("values_mismatch", "shape_mismatch"):
        words, params = message
        return [*setup, *want, held, call, now, *each,
                f"    if key == {COUNT!r}:",
                Assert("torch.equal(t, want[key].to(t.dtype))", words, {**about, **params},
                       indent=2),
                "        continue",
                Close("t.detach()", "want[key].to(t.dtype)", dtype_name, words,
                      {**about, **params}, indent=1)]
    return None


# --- load_state_ -------------------------------------------------------------------------------

def _state_lines(case: Case) -> list[Line]:
    """The model and the state dict it is given (inputs.py `build_state`)."""
    source = dtype(case["source_dtype"])
    lines = [*mlp_lines(), f"module = mlp({case['seed']}, {dtype(case['dtype'])})",
             f"state = mlp_values({case['seed'] + 50}, {source})"]
    problem, key = case.get("problem"), case.get("key", "")
    if problem == "missing":
        lines.append(f"del state[{key!r}]")
    elif problem == "unexpected":
        lines.append(f"state[{key!r}] = {draw([2, 2], case['seed'] + 7)}"
                     f"{_cast(case['source_dtype'])}")
    elif problem == "shape":
        shape = [size + 1 for size in MLP_SHAPES[key]]
        lines.append(f"state[{key!r}] = {draw(shape, case['seed'] + 7)}"
                     f"{_cast(case['source_dtype'])}")
    return lines


def _load_state(check: CheckSpec, case: Case, finding: Finding) -> list[Line] | None:
    key, function = finding.key, "load_state_"
    call = "load_state_(module, state)"
    setup = _state_lines(case)
    if "problem" in case:
        return _refused(check, case, finding, setup, call)
    if key == "optimizer_detached":
        return [*setup, f"optimizer = torch.optim.SGD(list(module.parameters()), lr={LR!r})",
                call,
                "start = {name: p.detach().clone() for name, p in module.named_parameters()}",
                "for group in optimizer.param_groups:",
                "    for p in group['params']:",
                "        p.grad = torch.ones_like(p)",
                "optimizer.step()",
                "for name, p in module.named_parameters():",
                Assert(f"not ({same_values('p.detach()', 'start[name]')})",
                       "optimizer_detached", {"function": function,
                                              "tensor": Runtime("name")}, indent=1)]
    want: list[Line] = [f"want = mlp_values({case['seed'] + 50}, {dtype(case['source_dtype'])})"]
    return _entries(key, function=function, module="module", call=call, setup=setup,
                    want=want, message=("loaded_values", {}), dtype_name=case["dtype"])


def _refused(check: CheckSpec, case: Case, finding: Finding, setup: list[Line],
             call: str) -> list[Line] | None:
    """A state dict with a missing key, one too many, or a wrong shape: torch's loader
    raises a RuntimeError naming the key, and leaves the module as it was."""
    key, function = finding.key, "load_state_"
    if key == "load_state_accepts" or key == "load_state_error":
        return [*setup, *raises(call),
                Assert(f"isinstance(error, RuntimeError) and {case['key']!r} in "
                       "str(error).partition('\\n')[0]", "load_state_error",
                       {"function": function, "key": case["key"]})]
    if key == "not_atomic":
        return [*setup, "held = module.state_dict(keep_vars=True)",
                "values = {key: t.detach().clone() for key, t in held.items()}",
                *raises(call), "now = module.state_dict(keep_vars=True)",
                "for key, tensor in held.items():",
                "    t = now.get(key)",
                Assert("t is tensor and t.shape == values[key].shape and "
                       "torch.equal(t.detach(), values[key])", "not_atomic",
                       {"function": function, "tensor": Runtime("key")}, indent=1)]
    return None


# --- tie_weights_ ------------------------------------------------------------------------------

def _tie_weights(check: CheckSpec, case: Case, finding: Finding) -> list[Line] | None:
    key, function = finding.key, "tie_weights_"
    vocab, dim, seed, name = case["vocab"], case["dim"], case["seed"], case["dtype"]
    cast = _cast(name)
    setup: list[Line] = [
        f"decoder = torch.nn.Linear({dim}, {vocab}).to({dtype(name)})",
        f"embedding = torch.nn.Embedding({vocab}, {dim}).to({dtype(name)})",
        "with torch.no_grad():",
        f"    decoder.weight.copy_({draw([vocab, dim], seed)}{cast})",
        f"    decoder.bias.copy_({draw([vocab], seed + 1)}{cast})",
        f"    embedding.weight.copy_({draw([vocab, dim], seed + 2)}{cast})",
        "weight, bias = embedding.weight, decoder.bias",
    ]
    call = "tie_weights_(decoder, embedding)"
    about = {"function": function}
    if key in ERROR_KEYS:
        return [*setup, *must_not_raise(call, function=function)]
    if key == "not_returned":
        return [*setup, f"out = {call}", Assert("out is decoder", "returns_object",
                                                {**about, "name": "decoder"})]
    if key == "not_tied":
        return [*setup, call, Assert("decoder.weight is weight", "not_tied", about)]
    if key == "tied_twice":
        return [*setup, call,
                "listed = list(torch.nn.ModuleDict({'embedding': embedding, 'decoder': "
                "decoder}).parameters())",
                "count = sum(p.data_ptr() == weight.data_ptr() for p in listed)",
                Assert("count == 1", "tied_twice", {**about, "count": Runtime("count")})]
    if key == "module_entry_replaced":
        return [*setup, call, Assert("decoder.bias is bias", "entry_replaced",
                                     {**about, "tensor": "decoder.bias"})]
    if key == "embedding_changed":
        return [*setup, "values = weight.detach().clone()", call,
                Assert(f"embedding.weight is weight and "
                       f"{same_values('weight.detach()', 'values')}", "embedding_changed",
                       about)]
    return None


# --- ema_update_model_ -------------------------------------------------------------------------

def _ema(check: CheckSpec, case: Case, finding: Finding) -> list[Line] | None:
    key, function = finding.key, "ema_update_model_"
    seed, decay, name = case["seed"], case["decay"], case["dtype"]
    call = f"ema_update_model_(ema, model, {decay!r})"
    if case.get("measure") == "allocation":
        return _ema_allocation(case, finding, call)
    setup: list[Line] = [*mlp_lines(), f"ema = mlp({seed}, {dtype(name)})",
             f"model = mlp({seed + 500}, {dtype(name)})"]
    if key == "input_modified":
        return [*setup, "source = list(model.state_dict(keep_vars=True).values())",
                "values = [t.detach().clone() for t in source]",
                "versions = [t._version for t in source]", call,
                "now = list(model.state_dict(keep_vars=True).values())",
                Assert("len(now) == len(source) and all(a is b and "
                       f"{same_values('a.detach()', 'v')} and a._version == n "
                       "for a, b, v, n in zip(now, source, values, versions))",
                       "input_modified", {"function": function, "tensor": "model"})]
    want: list[Line] = [f"ema64, model64 = mlp_values({seed}, torch.float64), "
            f"mlp_values({seed + 500}, torch.float64)",
            f"parameters = {list(MLP_PARAMETERS)!r}",
            f"want = {{key: {decay!r} * ema64[key] + (1 - {decay!r}) * model64[key] "
            "if key in parameters else model64[key] for key in ema64}"]
    return _entries(key, function=function, module="ema", call=call, setup=setup, want=want,
                    message=("ema_values", {"decay": decay}), dtype_name=name)


def _ema_allocation(case: Case, finding: Finding, call: str) -> list[Line] | None:
    """The wide model's update under the profiler (inputs.py `build_wide`), where the
    temporary is clearly over the budget of its weight."""
    seed, width, name = case["seed"], case["width"], case["dtype"]
    cast = _cast(name)
    setup: list[Line] = [f"ema = torch.nn.Linear({width}, {width}).to({dtype(name)})",
                         f"model = torch.nn.Linear({width}, {width}).to({dtype(name)})",
                         "with torch.no_grad():"]
    for module, start in (("ema", seed), ("model", seed + 500)):
        setup += [f"    {module}.weight.copy_({draw([width, width], start)}{cast})",
                  f"    {module}.bias.copy_({draw([width], start + 1)}{cast})"]
    if finding.key in ERROR_KEYS:
        return [*setup, *must_not_raise(call, function="ema_update_model_")]
    if finding.key in ("full_size_temporary", "kernel_temporary") and clearly_over(
            finding, width * width * itemsize(name)):
        return [*setup, *profiled([call], tensor="ema.weight", function="ema_update_model_")]
    return None  # a peak near the budget, or one only the sandbox's meters see


# --- batchnorm_update_ -------------------------------------------------------------------------

def _batchnorm(check: CheckSpec, case: Case, finding: Finding) -> list[Line] | None:
    key, function = finding.key, "batchnorm_update_"
    seed, shape, steps, name = case["seed"], case["shape"], case["steps"], case["dtype"]
    channels, cast = shape[1], _cast(name)
    grad = ".requires_grad_()" if case.get("requires_grad") else ""
    setup: list[Line] = [
        f"running_mean = {draw([channels], seed)}{cast}",
        f"running_var = {draw([channels], seed + 1)}{cast}.abs() + 0.5",
        f"num_batches_tracked = torch.tensor({seed % 5}, dtype=torch.long)",
        f"batches = [(torch.randn({shape}, generator=torch.Generator().manual_seed("
        f"{seed + 10} + step), dtype=torch.float64){cast} * 2 + 0.5){grad} "
        f"for step in range({steps})]",
        "statistics = {'running_mean': running_mean, 'running_var': running_var, "
        "'num_batches_tracked': num_batches_tracked}",
    ]
    keywords = f", momentum={case['momentum']!r}" if "momentum" in case else ""
    call = f"batchnorm_update_(running_mean, running_var, num_batches_tracked, batch{keywords})"
    about = {"function": function, "tensor": Runtime("name")}
    each = "for name, t in statistics.items():"
    if key in ERROR_KEYS:
        return [*setup, "for batch in batches:",
                *indented(must_not_raise(call, function=function), 1)]
    loop = ["for batch in batches:", f"    {call}"]
    if key == "not_none":
        return [*setup, "for batch in batches:", f"    out = {call}",
                Assert("out is None", "returns_none", {"function": function}, indent=1)]
    if key == "storage_replaced":
        return [*setup, "before = {name: t.data_ptr() for name, t in statistics.items()}",
                Comment("kept_alive"), "aliases = [t.detach() for t in statistics.values()]",
                *loop, each,
                Assert("t.data_ptr() == before[name]", "storage_replaced", about, indent=1)]
    if key == "version_unchanged":
        return [*setup, "versions = {name: t._version for name, t in statistics.items()}",
                *loop, each,
                Assert("t._version > versions[name]", "version_unchanged", about, indent=1)]
    if key == "statistics_history":
        return [*setup, *loop, each,
                Assert("t.grad_fn is None and not t.requires_grad", "grad_keeps_history",
                       about, indent=1)]
    if key == "batches_miscounted":
        expected = seed % 5 + steps
        return [*setup, *loop,
                Assert(f"torch.equal(num_batches_tracked, torch.tensor({expected}))",
                       "batches_miscounted", {"function": function, "expected": expected})]
    if key in ("values_mismatch", "shape_mismatch"):
        momentum = case.get("momentum", 0.1)
        return [*setup, "", Comment("reference_batchnorm"),
                f"norm = torch.nn.BatchNorm1d({channels}, momentum={momentum!r}, "
                "dtype=torch.float64)",
                "with torch.no_grad():",
                "    for name, t in statistics.items():",
                "        getattr(norm, name).copy_(t)",
                "    for batch in batches:",
                "        norm(batch.detach().double())",
                "", *loop,
                *[Close(stat, f"norm.{stat}.to({stat}.dtype)", name, "values",
                        {"function": function, "tensor": stat})
                  for stat in ("running_mean", "running_var")]]
    return None
