"""Issue 26, weaknesses 1 and 2: the audit hook trusts code for what it is (the code objects
loaded from files before the submission), never for its file name; the tamper watch sees a
function rewritten in place (its code, defaults, closure cells, `__dict__`); the guards and the
torch.optim recorder hold no original a submission could take out.

Each hook test runs in a fresh interpreter: a hook cannot be removed from the process that
added it. The submission is a module imported from a folder of its own after the hook is
installed (the script's own top-level code runs while the index of trusted code is made, as the
zygote's does, so it is trusted)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types
from pathlib import Path

from grader.sandbox import tamper


def run(script: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def hooked(folder: Path, submission: str) -> str:
    """Run `submission` as a module imported, after the hook, from `folder`."""
    (folder / "attack.py").write_text(textwrap.dedent("""
        def attempt(what, action):
            try:
                action()
            except PermissionError as exc:
                print(what, "refused:", exc)
            else:
                print(what, "allowed")
    """) + textwrap.dedent(submission))
    return run(f"""
    import sys
    from pathlib import Path

    from grader.sandbox import audit
    from grader.sandbox.limits import python_paths

    reports = []
    audit.install(trusted_roots=python_paths(), untrusted_roots=[Path({str(folder)!r})],
                  report=reports.append, report_call=reports.append,
                  protected_prefixes=("torch", "grader"))
    sys.path.insert(0, {str(folder)!r})
    import attack
    print("reports:", reports)
    """)


def test_code_named_like_the_interpreters_own_is_still_the_submissions(tmp_path: Path) -> None:
    out = hooked(tmp_path, """
    import code, codeop, json, types
    attempt("runsource", lambda: code.InteractiveInterpreter({}).runsource(
        "import sys; sys._getframe()", "<frozen posixpath>", "exec"))
    attempt("codeop", lambda: codeop.compile_command("x = 1", "<frozen importlib._bootstrap>",
                                                     "exec"))
    attempt("compile", lambda: compile("x = 1", "/usr/lib/python3.11/json/__init__.py", "exec"))
    attempt("exec", lambda: exec("x = 1", {}))
    attempt("eval", lambda: eval("1 + 1"))
    made = (lambda: 0).__code__
    attempt("function", lambda: types.FunctionType(made, {}))
    attempt("read code", lambda: json.dumps.__code__)
    attempt("read kwdefaults", lambda: json.dumps.__kwdefaults__)
    attempt("set code", lambda: setattr(json.dumps, "__code__", made))
    """)
    for what in ("runsource", "codeop", "compile", "exec", "eval", "function", "read code",
                 "read kwdefaults", "set code"):
        assert f"{what} refused" in out, out
    assert "compiling code at run time" in out and "replacing dumps.__code__" in out


def test_library_code_made_at_run_time_for_its_own_use_is_not_refused(tmp_path: Path) -> None:
    """dataclasses, namedtuple and typing compile and run code themselves, called by the
    submission: the nearest caller is trusted code, so they work (and what they make is not
    trusted: it asks for nothing the hook refuses)."""
    out = hooked(tmp_path, """
    import collections, dataclasses, typing

    def make():
        @dataclasses.dataclass
        class Point:
            x: int
            y: int = 0
        Pair = collections.namedtuple("Pair", "a b")
        Typed = typing.NamedTuple("Typed", [("a", int)])
        return Point(1).y + Pair(1, 2).b + Typed(3).a

    attempt("library", make)
    import colorsys  # a module of the standard library imported after the hook
    attempt("new module", lambda: colorsys.rgb_to_hsv(0.1, 0.2, 0.3))
    """)
    assert "library allowed" in out and "new module allowed" in out, out
    assert "reports: []" in out, out


def test_the_guards_and_the_recorder_hold_no_original() -> None:
    """What `__closure__`, `__wrapped__` or `inspect.getclosurevars` can reach of a guard or a
    torch.optim wrapper is an event and a name; the call still works; raising the event by
    hand gets nothing."""
    out = run("""
    import inspect, sys, types
    import torch
    from grader.checks.policy import POLICY_EVENT, CallRecorder
    from grader.sandbox import audit

    audit.guard_version_counters()
    CallRecorder("torch.optim").install(audit.keep_originals)
    import torch.optim._functional as functional
    targets = [torch._C._increment_version, torch._C._autograd._unsafe_set_version_counter,
               torch.optim.SGD.step, torch.optim.SGD.__init__, torch.optim.Optimizer.zero_grad,
               sys.modules["torch.optim.sgd"].sgd, functional.sgd]
    for target in targets:
        inside = [cell.cell_contents for cell in target.__closure__ or ()]
        inside += list(inspect.getclosurevars(target).nonlocals.values())
        assert all(value is sys.audit or isinstance(value, str) for value in inside), inside
        assert not hasattr(target, "__wrapped__"), target
    assert functional.sgd is sys.modules["torch.optim.sgd"].sgd
    p = torch.zeros(3, requires_grad=True)
    version = p._version
    torch._C._increment_version(p)
    assert p._version > version
    p.grad = torch.ones(3)
    torch.optim.SGD([p], lr=0.5).step()
    assert p.detach().tolist() == [-0.5] * 3
    hand = []
    sys.audit(POLICY_EVENT, "torch.optim.sgd.SGD.step", hand)
    sys.audit(audit.VERSION_EVENT, "_increment_version", hand)
    assert hand == [], hand
    print("ok")
    """)
    assert "ok" in out


def test_a_function_rewritten_in_place_is_named() -> None:
    """Same function object, new parts: each is seen, and named by the function."""
    victim = types.ModuleType("victim")
    exec(textwrap.dedent("""
        def make():
            limit = 4
            def meter(nbytes, *, scale=1):
                return nbytes * scale > limit
            return meter
        meter = make()
        def writer(record, extra=0):
            return record
        writer.hooked = True
    """), victim.__dict__)
    meter, writer = victim.meter, victim.writer  # type: ignore[attr-defined]
    rewrites = [
        lambda: setattr(writer, "__code__", (lambda record, extra=0: None).__code__),
        lambda: setattr(writer, "__defaults__", (1,)),
        lambda: setattr(meter, "__kwdefaults__", {"scale": 0}),
        lambda: setattr(meter.__closure__[0], "cell_contents", 10**12),
        lambda: writer.__dict__.__setitem__("hooked", False),
    ]
    for rewrite in rewrites:
        changes = tamper.watch({"victim": victim})
        assert changes() == []
        rewrite()
        found = changes()
        assert found and found[0].startswith(("victim.make.<locals>.meter",
                                              "victim.writer")), found
        assert not any(name.startswith("victim.make ") for name in found), found


def test_the_child_watches_the_meters_the_writer_and_torch_optim() -> None:
    """Derived from the modules loaded, not listed by hand."""
    import torch.optim

    from grader.checks import allocation
    from grader.sandbox import child, probing, wire

    functions = set(map(id, tamper.watched()[tamper.FUNCTIONS].functions))
    for function in (allocation.HostMemoryMeter.__exit__, allocation.ProfilerMeter.__exit__,
                     allocation.AllocationTracker.__torch_dispatch__, child._save,
                     wire.dumps, sys.modules["torch.optim.sgd"].sgd, torch.optim.SGD.step,
                     probing.PROBE_CAPTURES["torch.autograd.gradcheck"]):
        assert id(function) in functions, function


def test_the_watch_stays_cheap() -> None:
    """The snapshot and a comparison over every watched function: milliseconds."""
    import time

    spaces = tamper.watched()
    started = time.perf_counter()
    changes = tamper.watch(spaces)
    snapshot = time.perf_counter() - started
    started = time.perf_counter()
    assert changes() == []
    compare = time.perf_counter() - started
    assert snapshot < 0.25 and compare < 0.05, (snapshot, compare)
