"""The static integrity scan: source that reaches for what tampering with a grader needs.

Instructor-facing. The audit hook refuses most of these routes at run time (sandbox/audit.py);
this scan also names those that raise no event (ctypes once loaded, a buffer mapped with mmap,
code that only *detects* the grader's meters and behaves differently under them, a version
counter set by hand, a wrapper's closure dug out). Correct code in this course uses none of
them, so a finding is a reason to look, not a verdict: with `--integrity flag` (the default)
the student's feedback says only that the submission was flagged for review, and the class
summary lists the findings; with `--integrity fail` the functions that reach them fail.

Runs in the sandbox child before the submission is imported, with the policy scan (source.py).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from grader.checks.source import Attributed, Source, attribute, parse

FRAMES = "frame introspection"
OBJECTS = "object walking"
HOOKS = "profiling or tracing hook"
MEMORY = "raw memory"
INTERNALS = "torch internals"
DETECTION = "detecting the grader's meters"
DESCRIPTORS = "raw descriptor writes"
UNWRAPPING = "unwrapping or rewriting functions"
RELOAD = "reloading modules"
GRADER = "the grader's own modules"
PROC = "reading /proc"
PATCHING = "patching a library"

# module-qualified calls and attributes: (module, attribute) -> category
QUALIFIED = {
    ("sys", "_getframe"): FRAMES, ("sys", "_current_frames"): FRAMES,
    ("inspect", "currentframe"): FRAMES, ("inspect", "stack"): FRAMES,
    ("inspect", "trace"): FRAMES, ("inspect", "getouterframes"): FRAMES,
    ("inspect", "getinnerframes"): FRAMES, ("traceback", "walk_stack"): FRAMES,
    ("traceback", "walk_tb"): FRAMES,
    ("gc", "get_objects"): OBJECTS, ("gc", "get_referrers"): OBJECTS,
    ("gc", "get_referents"): OBJECTS,
    ("sys", "setprofile"): HOOKS, ("sys", "settrace"): HOOKS, ("sys", "addaudithook"): HOOKS,
    ("threading", "setprofile"): HOOKS, ("threading", "settrace"): HOOKS,
    ("torch", "frombuffer"): MEMORY, ("np", "frombuffer"): MEMORY,
    ("numpy", "frombuffer"): MEMORY,
    ("tracemalloc", "is_tracing"): DETECTION,
    ("os", "write"): DESCRIPTORS, ("os", "pwrite"): DESCRIPTORS, ("os", "writev"): DESCRIPTORS,
    ("os", "dup2"): DESCRIPTORS, ("os", "fdopen"): DESCRIPTORS, ("os", "close"): DESCRIPTORS,
    ("importlib", "reload"): RELOAD,
    ("logging", "currentframe"): FRAMES, ("sys", "monitoring"): HOOKS,
    ("_jit_internal", "createResolutionCallbackFromFrame"): FRAMES,
}
COMPUTED = "reaching torch by a computed name"
# attribute names that only introspection or the grader's internals use, on any object
ATTRIBUTES = {
    "f_back": FRAMES, "f_locals": FRAMES, "f_globals": FRAMES, "tb_frame": FRAMES,
    "gi_frame": FRAMES, "cr_frame": FRAMES, "ag_frame": FRAMES,
    "__wrapped__": UNWRAPPING, "__closure__": UNWRAPPING, "cell_contents": UNWRAPPING,
    "__code__": UNWRAPPING, "__globals__": UNWRAPPING, "co_consts": UNWRAPPING,
    "_unsafe_set_version_counter": INTERNALS, "_increment_version": INTERNALS,
    "increment_version": INTERNALS, "_unsafe_preserve_version_counter": INTERNALS,
    "_len_torch_dispatch_stack": DETECTION, "_len_torch_function_stack": DETECTION,
    "_get_current_dispatch_mode": DETECTION, "_get_current_function_mode": DETECTION,
    "_is_profiler_enabled": DETECTION, "_profiler_enabled": DETECTION,
    "_disable_current_modes": DETECTION, "_DisableTorchDispatch": DETECTION,
    "_pop_torch_function_stack": DETECTION, "_pop_torch_dispatch_stack": DETECTION,
    "_python_dispatch": DETECTION,
    "TorchFunctionMode": DETECTION, "TorchDispatchMode": DETECTION,
}
IMPORTS = {"ctypes": MEMORY, "_ctypes": MEMORY, "mmap": MEMORY, "grader": GRADER,
           "tracemalloc": DETECTION}
# Modules whose attributes a submission must not assign (torch.backends settings are fine; sys
# is not here: notebooks set sys.argv or sys.stdout for good reasons).
PATCHABLE = {"torch", "json", "builtins", "os", "struct", "io", "functools", "math",
             "numpy", "np", "ctypes", "inspect", "gc", "importlib", "grader", "traceback"}


def integrity_uses(source: str | Source, *, names: Sequence[str]) -> Attributed:
    """The findings, by lab name and at module level (which reaches every name)."""
    parsed = source if isinstance(source, Source) else parse(source)
    imported = _imported_modules(parsed)
    return attribute(parsed, names, lambda node: _finding(node, imported))


def _imported_modules(source: Source) -> dict[str, str]:
    """Local name -> top-level module, for `import x`, `import x as y`, `import x.y`."""
    names: dict[str, str] = {}
    for node in source.nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                names.setdefault(alias.asname or alias.name, node.module.split(".")[0])
    return names


def _root(node: ast.AST) -> tuple[str, list[str]]:
    """The name an attribute chain starts from, and the attribute names after it."""
    attributes: list[str] = []
    while isinstance(node, ast.Attribute):
        attributes.insert(0, node.attr)
        node = node.value
    return (node.id if isinstance(node, ast.Name) else ""), attributes


def _finding(node: ast.AST, imported: dict[str, str]) -> str | None:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        modules = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                   else [node.module or ""])
        for module in modules:
            top = module.split(".")[0]
            if top in IMPORTS:
                return IMPORTS[top]
            if module.startswith("torch._C") or module.startswith("torch.utils._python_"):
                return INTERNALS
        if isinstance(node, ast.ImportFrom):  # from sys import _getframe
            top = (node.module or "").split(".")[0]
            for alias in node.names:
                label = ATTRIBUTES.get(alias.name) or QUALIFIED.get((top, alias.name))
                if label:
                    return label
        return None
    if isinstance(node, ast.Name) and node.id in ("TorchFunctionMode", "TorchDispatchMode"):
        return DETECTION
    if isinstance(node, ast.Attribute):
        if node.attr in ATTRIBUTES:
            return ATTRIBUTES[node.attr]
        root, chain = _root(node)
        module = imported.get(root, root)
        if len(chain) == 1 and (module, node.attr) in QUALIFIED:
            return QUALIFIED[(module, node.attr)]
        if module == "torch" and chain[:1] == ["_C"] and len(chain) == 1:
            return INTERNALS  # torch._C (reported once, on the chain's first link)
        return None
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute):
                owner, path = _root(target)
                if imported.get(owner) in PATCHABLE and path[:1] != ["backends"]:
                    return PATCHING
        return None
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("setattr", "delattr"):
        if node.args and imported.get(_root(node.args[0])[0]) in PATCHABLE:
            return PATCHING
        return None
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "getattr":
        # getattr(torch, "op" + "tim"): a name the policy scan cannot read
        if (len(node.args) >= 2 and imported.get(_root(node.args[0])[0]) == "torch"
                and not isinstance(node.args[1], ast.Constant)):
            return COMPUTED
        return None
    if isinstance(node, ast.Subscript):  # sys.modules["grader..."]
        root, chain = _root(node.value)
        key = node.slice
        if (imported.get(root) == "sys" and chain == ["modules"]
                and isinstance(key, ast.Constant) and str(key.value).startswith("grader")):
            return GRADER
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return PROC if node.value.startswith("/proc/") else None
    return None
