"""The child's audit hook (PEP 578): the introspection that forging a verdict needs is refused.

Every forgery found by attack worked from inside the child's interpreter: walking frames up to
the probe to rewrite its observations, finding them through `gc`, a profile hook that sees each
probe return, reloading torch.optim to get classes the policy had not wrapped, importing the
grader's own reference or judge. An audit hook installed before the submission is imported
cannot be removed from Python, and each of those routes raises an audit event first:

- always refused: `sys.setprofile`, `sys.settrace` (a hook sees every call and return of the
  probes), `sys._current_frames`, `sys.addaudithook`, importing a grader module that the child
  does not already hold, and re-executing a module of torch or of the grader (a reload);
- refused when the submission's own code asks: frame objects (`sys._getframe`, `tb_frame`,
  `gi_frame`, `cr_frame`, `ag_frame`), `gc.get_objects` / `get_referrers` / `get_referents`,
  ctypes' loaders and raw memory reads, new code objects (`code.__new__`, `marshal.loads`),
  compiling or running code from a string (`compile`, `exec`, `eval`, and through the
  standard library's compilers: `code`, `codeop`, `timeit`, `runpy`, ...), making a function
  over a code object (`types.FunctionType`), and reading or replacing the code or defaults
  of a function of torch, the grader or the stdlib (`f.__code__ = ...`);
- opening another process's memory or environment through /proc, or a process's
  clear_refs (which would erase the peak the outside memory meter reads), from anywhere.

NOTE: [trust by identity]. "The submission's own code" is any frame whose code object is not
one the interpreter loaded from a file of Python, the installed packages or this grader: the
zygote indexes the code objects of every function alive before any submission exists
(`LoadedModules.code_ids`; nested code included), and the hook adds the module code of each
file the import system loads later from those folders (the `exec` event of an import). A code
object's `co_filename` is whatever string its compiler was given (`"<frozen importlib...>"`
included), so it decides nothing; code made at run time is never trusted, whoever made it
(dataclasses' and namedtuple's generated methods run as untrusted code too, which asks for
none of the above). Library code that looks at frames for its own purposes (logging,
warnings, typing, namedtuple, torch itself) is not refused.

Each refusal raises `PermissionError` in the submission and is reported to the zygote on the
progress pipe (`T <what>`) before any record of the task exists, so a submission that catches
the error still fails the function.

An audit hook cannot see everything: rebinding a module or class attribute (`json.dumps = ...`,
`torch.Tensor.data_ptr = ...`) raises no event, nor does writing a closure cell or a function's
`__dict__` (tamper.py watches those), nor `ctypes.memmove` once ctypes is loaded, nor reading a
closure's cells: so the originals the guards need are held by an audit hook of their own
(`keep_originals`), which nothing in Python can reach, never in a closure. The static integrity
scan (checks/integrity.py) flags what is left for the instructor.
"""

from __future__ import annotations

import _thread
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType, FunctionType, ModuleType
from typing import Any

from grader.checks import policy, tensors

ALWAYS_REFUSED = frozenset({"sys.setprofile", "sys.settrace", "sys._current_frames",
                            "sys.addaudithook", "sys.monitoring.register_callback"})
REFUSED_FROM_SUBMISSION = frozenset({
    "sys._getframe", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.string_at",
    "ctypes.wstring_at", "ctypes.cdata", "ctypes.cdata/buffer", "ctypes.PyObj_FromPtr",
    "code.__new__", "marshal.loads",
})
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
SECRET_PROC_FILES = ("mem", "environ", "pagemap", "clear_refs")
# Frames of trusted code (see NOTE: [trust by identity]) that hand frames (or imports) on to
# their caller, so the caller is who asked: (part of the file name, function or "" for any).
# Stack walking through `traceback` counts as its caller's; its formatting of a traceback the
# caller caught (print_exc) does not, except `walk_tb`, which yields the frames themselves to
# whoever iterates it.
HANDS_ON = (("<frozen importlib.", ""), ("importlib/__init__.py", ""), ("/inspect.py", ""),
            ("logging/__init__.py", "<lambda>"),  # logging.currentframe
            ("torch/_jit_internal.py", "createResolutionCallbackFromFrame"))
HANDS_ON_STACK = (*HANDS_ON, ("/traceback.py", ""))
HANDS_ON_FRAMES = (*HANDS_ON, ("/traceback.py", "walk_tb"))
# The standard library's compilers of a string their caller hands them: their caller asked.
COMPILERS = (("/code.py", ""), ("/codeop.py", ""), ("/timeit.py", ""), ("/runpy.py", ""),
             ("/pdb.py", ""), ("/bdb.py", ""), ("/doctest.py", ""), ("/profile.py", ""),
             ("/cProfile.py", ""), ("/trace.py", ""), ("<frozen runpy>", ""))
# torch's public wrappers around the version counter, and our guard: their caller asked.
HANDS_ON_VERSION = (*HANDS_ON, ("torch/autograd/graph.py", "increment_version"),
                    ("torch/autograd/grad_mode.py", ""), ("grader/sandbox/audit.py", "guarded"))
# Events the grader raises itself (sys.audit), for the hook to report or decide.
INTEGRITY_EVENT = "inplace-grader.integrity"  # a finding, reported as it is
SUBCLASS_EVENT = tensors.SUBCLASS_EVENT  # a tensor the grader observed is a subclass
POLICY_EVENT = policy.POLICY_EVENT  # a call into the forbidden package
VERSION_EVENT = "inplace-grader.version"  # a version counter set by hand
TASK_EVENT = "inplace-grader.task"  # a task starts
FUNCTION_ATTRIBUTES = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
WATCHED = ALWAYS_REFUSED | REFUSED_FROM_SUBMISSION | {
    "object.__getattr__", "object.__setattr__", "object.__delattr__", "import", "exec",
    "compile", "function.__new__", "open", INTEGRITY_EVENT, SUBCLASS_EVENT, POLICY_EVENT,
    VERSION_EVENT, TASK_EVENT}


class Refused(PermissionError):
    """What the submission's code sees when the hook refuses it."""


@dataclass(frozen=True)
class LoadedModules:
    """The modules of torch and of the grader loaded now, by identity and by source file:
    running one of their files again is a reload; and the code objects of every function
    alive now, by identity (see NOTE: [trust by identity]).

    The zygote makes this once (`loaded_modules`) and every child inherits it: its children
    hold exactly the zygote's modules, and walking them all again in each child would touch,
    and so copy, the zygote's pages there (docs/sandbox.md#numbers-behind-the-code)."""

    prefixes: tuple[str, ...]
    ids: dict[int, str]
    files: dict[str, str]
    count: int  # len(sys.modules) when it was made
    # Each trusted code object by `object.__hash__`: its address, as id() gives it, but with
    # no audit event (id() raises one, which every hook then handles, on every frame checked).
    code_ids: frozenset[int] = frozenset()
    code: tuple[CodeType, ...] = ()  # the code objects themselves: alive, their ids stay theirs

    def current(self, prefixes: tuple[str, ...]) -> LoadedModules:
        """This index where it still describes sys.modules, else a fresh one (a module was
        imported or dropped since, or other prefixes are asked for)."""
        if prefixes == self.prefixes and len(sys.modules) == self.count and self.code:
            return self
        return loaded_modules(prefixes)


def loaded_modules(prefixes: tuple[str, ...]) -> LoadedModules:
    """Made before any submission runs in this process (the zygote, or a child before its
    import): every function alive is the interpreter's, a package's or the grader's."""
    modules = [(name, module) for name, module in list(sys.modules.items())
               if module is not None and name.startswith(prefixes)]
    files = {_source_file(module): name for name, module in modules}
    files.pop("", None)
    code = trusted_code()
    return LoadedModules(prefixes=prefixes, ids={id(module): name for name, module in modules},
                         files=files, count=len(sys.modules),
                         code_ids=frozenset(map(object.__hash__, code)), code=code)


def trusted_code() -> tuple[CodeType, ...]:
    """The code of every function alive now, with the code nested in it (inner functions,
    lambdas, comprehensions); what it costs: docs/sandbox.md#numbers-behind-the-code."""
    import gc

    found: dict[int, CodeType] = {}
    stack = [obj.__code__ for obj in gc.get_objects() if type(obj) is FunctionType]
    while stack:
        code = stack.pop()
        if id(code) not in found:
            found[id(code)] = code
            stack += [const for const in code.co_consts if type(const) is CodeType]
    return tuple(found.values())


def nested_code(code: CodeType) -> list[CodeType]:
    """`code` and every code object nested in it."""
    found, stack = [], [code]
    while stack:
        code = stack.pop()
        found.append(code)
        stack += [const for const in code.co_consts if type(const) is CodeType]
    return found


def install(*, trusted_roots: Iterable[Path], untrusted_roots: Iterable[Path],
            report: Callable[[str], None], report_call: Callable[[str], None],
            protected_prefixes: tuple[str, ...], loaded: LoadedModules | None = None) -> None:
    """Install the hook for the rest of this process's life.

    `trusted_roots`: folders whose files the import system may load trusted code from (the
    interpreter's, the installed packages', the grader's); `untrusted_roots`: the submission's
    own file and folders (checked first, so a student folder inside a trusted one stays
    untrusted). Code already loaded is known by identity (`loaded.code_ids`, NOTE: [trust by
    identity]). `report` tells the zygote, once per distinct refusal in each task;
    `report_call` relays a forbidden package's call (checks/policy.py). `protected_prefixes`:
    module names whose code must not run again (torch, grader): a reload would replace what
    the grader wrapped or relies on; `loaded` indexes them where the caller has made that
    index already (the zygote, for its children).

    Everything the hook reads is bound here, in its closure: nothing a submission can reach
    (no module global, no builtin looked up at call time) changes what it decides.
    """
    import _frozen_importlib
    import _frozen_importlib_external as external

    trusted = tuple(str(root) + os.sep for root in trusted_roots)
    untrusted = tuple(str(root) for root in untrusted_roots)
    getframe, get_ident, modules = sys._getframe, _thread.get_ident, sys.modules
    fsdecode, realpath, basename = os.fsdecode, os.path.realpath, os.path.basename
    is_instance, text, get_attribute, any_of = isinstance, str, getattr, any
    ident, kind, namespace, keys, length = id, type, vars, frozenset, len
    address = object.__hash__  # of a code object: see LoadedModules.code_ids
    code_type, function_type, nested = CodeType, FunctionType, nested_code
    watched, always, from_submission = WATCHED, ALWAYS_REFUSED, REFUSED_FROM_SUBMISSION
    frame_attributes, function_attributes = FRAME_ATTRIBUTES, FUNCTION_ATTRIBUTES
    hands_on, hands_on_stack, hands_on_frames = HANDS_ON, HANDS_ON_STACK, HANDS_ON_FRAMES
    hands_on_version, secret_files, compilers = HANDS_ON_VERSION, SECRET_PROC_FILES, COMPILERS
    integrity_event, policy_event, version_event = INTEGRITY_EVENT, POLICY_EVENT, VERSION_EVENT
    subclass_event, task_event = SUBCLASS_EVENT, TASK_EVENT
    refused = Refused
    # The import system's frame that runs a module's code, and the loaders that read a
    # module's code from its own file (an instance with nothing of its own but its name and
    # path: a method set on it would read other bytes).
    importing = get_attribute(_frozen_importlib, "_call_with_frames_removed").__code__
    frozen = _frozen_importlib.FrozenImporter.exec_module.__code__
    file_loaders = (external.SourceFileLoader, external.SourcelessFileLoader)
    loader_fields = frozenset({"name", "path"})
    # Modules that exist now: running their code again is a reload.
    index = (loaded.current(protected_prefixes) if loaded is not None
             else loaded_modules(protected_prefixes))
    loaded_ids, files, known = index.ids, index.files, index.code_ids
    added: set[int] = set()  # code of modules imported from a trusted file since
    kept: list[CodeType] = []  # ... kept alive, so that no other object takes its id
    busy: set[int] = set()
    reported: set[str] = set()

    def trusted_code(code: CodeType) -> bool:
        number = address(code)
        return number in known or number in added

    def is_trusted_file(filename: str) -> bool:
        return not filename.startswith(untrusted) and filename.startswith(trusted)

    def asker(passing: tuple[tuple[str, str], ...], depth: int) -> FrameType | None:
        """The frame that asked: the event's caller, or past trusted frames that hand on."""
        try:
            frame: FrameType | None = getframe(depth)
        except ValueError:  # an event raised with no Python caller
            return None
        while frame is not None and trusted_code(frame.f_code) and any_of(
                part in frame.f_code.co_filename and function in ("", frame.f_code.co_name)
                for part, function in passing):
            frame = frame.f_back
        return frame

    def asked_by_submission(passing: tuple[tuple[str, str], ...] = hands_on) -> bool:
        frame = asker(passing, 4)  # 0 asker, 1 here, 2 check, 3 hook, 4 the event
        return frame is not None and not trusted_code(frame.f_code)

    def refuse(what: str) -> None:
        if what not in reported:
            reported.add(what)
            report(what)
        raise refused(f"inplace-grader: {what} is not allowed in a graded submission")

    def trusted_function(target: Any) -> bool:
        """By its code's identity: `__module__` and `co_filename` are the submission's to
        choose."""
        if not is_instance(target, function_type):
            return False
        return trusted_code(target.__code__)  # its own event: skipped (busy)

    def secret(path: str) -> bool:
        """/proc/<pid>/{mem,environ,pagemap,clear_refs} however named (`//proc`, a link, a
        relative path from a folder in /proc), or any such name opened relative to a
        descriptor; and a pipe or socket reopened by its /proc name (`/proc/self/fd/N`),
        which would give the submission a new end of the worker's channels."""
        name, real = basename(path), realpath(path)
        if real.startswith("/proc/") and "/fd/" in real and ":[" in basename(real):
            return True
        return name in secret_files and (real.startswith("/proc/")
                                         or not path.startswith("/"))

    def imported_from_file(code: CodeType) -> bool:
        """The import system running a module's code that a standard loader read from a
        trusted file: that module's code is trusted from now on."""
        try:
            frame = getframe(3)  # 0 here, 1 check, 2 hook, 3 the event's caller
        except ValueError:
            return False
        if frame.f_code is frozen and code.co_filename.startswith("<frozen "):
            return True  # a module frozen into the interpreter itself
        if frame.f_code is not importing or not is_trusted_file(code.co_filename):
            return False
        arguments: Any = frame.f_locals.get("args")
        space: Any = arguments[1] if is_instance(arguments, tuple) and length(arguments) > 1 \
            else None
        loader = space.get("__loader__") if is_instance(space, dict) else None
        return (kind(loader) in file_loaders and keys(namespace(loader)) <= loader_fields
                and is_trusted_file(text(get_attribute(loader, "path", ""))))

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event not in watched:
            return
        me = get_ident()
        if me in busy:  # the hook's own getframe, or a refusal being raised
            return
        busy.add(me)
        try:
            check(event, args)
        finally:
            busy.discard(me)

    def check(event: str, args: tuple[Any, ...]) -> None:
        if event == integrity_event:
            report(text(args[0]) if args else "?")
        elif event == subclass_event:
            report(f"subclass {text(args[0]) if args else '?'}")
        elif event == policy_event:
            report_call(text(args[0]) if args else "?")
        elif event == task_event:
            reported.clear()  # each task reports its own refusals
        elif event == version_event:
            if asked_by_submission(hands_on_version):
                refuse(f"setting a tensor's version counter by hand ({args[0]})")
        elif event in always:
            refuse(event)
        elif event == "import":
            name = text(args[0])
            if name.split(".")[0] == "grader" and name not in modules:
                refuse(f"importing {name}")
        elif event == "exec":
            code = args[0]
            if not is_instance(code, code_type) or trusted_code(code):
                return
            if code.co_name == "<module>":
                reloaded = files.get(code.co_filename)
                if reloaded is not None and ident(modules.get(reloaded)) in loaded_ids:
                    refuse(f"reloading {reloaded}")
            if imported_from_file(code):
                for inner in nested(code):
                    added.add(address(inner))
                    kept.append(inner)
            elif asked_by_submission(compilers):
                refuse("running code made at run time")
        elif event == "open":
            path = args[0]
            if is_instance(path, (str, bytes)) and secret(fsdecode(path)):
                refuse(f"opening {fsdecode(path)}")
        elif event in from_submission:
            # The import system unmarshals a module's cached code for whoever imports it.
            if asked_by_submission(hands_on_stack if event == "sys._getframe" else
                                   () if event == "marshal.loads" else hands_on):
                refuse(event)
        elif event == "compile":
            # The immediate caller counts (importlib compiling a module's own file is not
            # the submission asking, even when its `import` started it), past the standard
            # library's compilers of their caller's strings.
            if asked_by_submission(compilers):
                refuse("compiling code at run time")
        elif event == "function.__new__":
            if asked_by_submission(()):
                refuse("making a function from a code object")
        elif event == "object.__getattr__":
            if args[1] in frame_attributes:
                if asked_by_submission(hands_on_frames):
                    refuse(f"reading .{args[1]}")
            elif args[1] in function_attributes and trusted_function(args[0]) \
                    and asked_by_submission(()):
                refuse(f"reading {get_attribute(args[0], '__qualname__', '?')}.{args[1]}")
        elif args[1] in function_attributes and trusted_function(args[0]) \
                and asked_by_submission(()):  # object.__setattr__ / __delattr__ of a function
            refuse(f"replacing {get_attribute(args[0], '__qualname__', '?')}.{args[1]}")

    sys.addaudithook(hook)


def guard_version_counters() -> None:
    """Refuse, to the submission, setting a tensor's version counter by hand: after a write
    through `.data` (which autograd cannot see) it would pass the version check. torch's own
    code may still call them. Each guard only raises an audit event: the hook decides who
    asked, and nothing a submission can reach holds that decision, nor the original (see
    `keep_originals`). Installed before the tamper snapshot, which then watches them."""
    import torch

    originals: dict[str, Callable[..., Any]] = {}
    for owner, name in ((torch._C._autograd, "_unsafe_set_version_counter"),
                        (torch._C, "_increment_version")):
        original = getattr(owner, name, None)
        if original is not None and name not in originals:
            originals[name] = original
            setattr(owner, name, _guarded(name))
    keep_originals(VERSION_EVENT, originals, caller=_guarded("").__code__)


def _guarded(name: str) -> Callable[..., Any]:
    event = sys.audit

    def guarded(*args: Any, **kwargs: Any) -> Any:
        hand: list[Callable[..., Any]] = []
        event(VERSION_EVENT, name, hand)  # the child's hook raises for the submission
        return hand.pop()(*args, **kwargs)

    return guarded


def keep_originals(event_name: str, originals: dict[str, Callable[..., Any]], *,
                   caller: CodeType) -> None:
    """Hold `originals` (qualified name -> the function a guard or recorder stands in for) in
    an audit hook of their own, which nothing in Python can reach (no API lists the hooks; `gc`
    is refused to the submission): the guard, whose code is `caller`, raises `event_name`
    with the name and an empty list, and this hook puts the original in it. A guard's closure
    then holds no original for `__closure__`, `inspect.getclosurevars` or `cell_contents` to
    take out, and a wrapper has no `__wrapped__`; the same event raised by anything else gets
    nothing. Added in the zygote, before any child's hook: hooks run in the order added, so a
    child's hook that refuses the event (the submission asked) raises after this one and the
    guard never gets to call the original."""
    held = dict(originals)
    is_list, length, getframe = isinstance, len, sys._getframe

    def hand_over(event: str, args: tuple[Any, ...]) -> None:
        if event == event_name and length(args) == 2 and is_list(args[1], list) \
                and getframe(1).f_code is caller:
            original = held.get(args[0])
            if original is not None:
                args[1].append(original)

    sys.addaudithook(hand_over)


def _source_file(module: ModuleType) -> str:
    return str(getattr(module, "__file__", None) or "")


def progress_reporter(fd: int, kind: str = "T") -> Callable[[str], None]:
    """A report function that writes `<kind> <what>` lines to the zygote (T: an integrity
    event, C: a forbidden call), with `os.write` captured now (a submission may replace
    `os.write` later)."""
    write = os.write

    def report(what: str) -> None:
        try:  # noqa: SIM105 - no module lookups here: a submission may replace contextlib's
            write(fd, (kind + " " + " ".join(what.split())[:200] + "\n").encode())
        except OSError:
            pass  # the submission closed the pipe: the task fails for that instead

    return report
