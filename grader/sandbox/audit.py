"""The child's audit hook (PEP 578): the introspection that forging a verdict needs is refused.

Every forgery found by attack worked from inside the child's interpreter: walking frames up to
the probe to rewrite its observations, finding them through `gc`, a profile hook that sees each
probe return, reloading torch.optim to get classes the policy had not wrapped, importing the
grader's own reference or judge. An audit hook installed before the submission is imported
cannot be removed from Python, and each of those routes raises an audit event first:

- always refused: `sys.setprofile`, `sys.settrace` (a hook sees every call and return of the
  probes), `sys._current_frames`, `sys.addaudithook`, importing a grader module that the child
  does not already hold, and re-executing a module of torch or of the grader (a reload);
- refused when the submission's own code asks (the nearest caller outside `inspect` and the
  import machinery is a file that is not part of Python, the installed packages or this
  grader): frame objects (`sys._getframe`, `tb_frame`, `gi_frame`, `cr_frame`, `ag_frame`),
  `gc.get_objects` / `get_referrers` / `get_referents`, ctypes' loaders and raw memory reads,
  new code objects, compiling code under a trusted file name (which would pass for library
  code), and replacing the code or defaults of a function of torch, the grader or the stdlib
  (`f.__code__ = ...`: plain attribute assignment raises no event, see below);
- opening another process's memory or environment through /proc, from anywhere.

Library code that looks at frames for its own purposes (logging, warnings, typing,
namedtuple, torch itself) is not refused. Each refusal raises `PermissionError` in the
submission and is reported to the zygote on the progress pipe (`T <what>`) before any record
of the task exists, so a submission that catches the error still fails the function.

An audit hook cannot see everything: rebinding a module or class attribute (`json.dumps = ...`,
`torch.Tensor.data_ptr = ...`) raises no event (tamper.py watches those), nor does
`ctypes.memmove` once ctypes is loaded, nor reading a closure's cells; the static integrity scan
(checks/integrity.py) flags what is left for the instructor.
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
    "code.__new__",
})
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
SECRET_PROC_FILES = ("mem", "environ", "pagemap")
# Frames that hand frames (or imports) on to their caller, so the caller is who asked:
# (part of the file name, function or "" for any). Stack walking through `traceback` counts as
# its caller's; its formatting of a traceback the caller caught (print_exc) does not, except
# `walk_tb`, which yields the frames themselves to whoever iterates it.
HANDS_ON = (("<frozen importlib.", ""), ("importlib/__init__.py", ""), ("/inspect.py", ""),
            ("logging/__init__.py", "<lambda>"),  # logging.currentframe
            ("torch/_jit_internal.py", "createResolutionCallbackFromFrame"))
HANDS_ON_STACK = (*HANDS_ON, ("/traceback.py", ""))
HANDS_ON_FRAMES = (*HANDS_ON, ("/traceback.py", "walk_tb"))
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
    "compile", "open", INTEGRITY_EVENT, SUBCLASS_EVENT, POLICY_EVENT, VERSION_EVENT,
    TASK_EVENT}


class Refused(PermissionError):
    """What the submission's code sees when the hook refuses it."""


@dataclass(frozen=True)
class LoadedModules:
    """The modules of torch and of the grader loaded now, by identity and by source file:
    running one of their files again is a reload.

    The zygote makes this once (`loaded_modules`) and every child inherits it: its children
    hold exactly the zygote's modules, and walking some 2,000 modules in each child would
    touch, and so copy, about 1,600 of the zygote's pages there (bench/sandbox_layers.py)."""

    prefixes: tuple[str, ...]
    ids: dict[int, str]
    files: dict[str, str]
    count: int  # len(sys.modules) when it was made

    def current(self, prefixes: tuple[str, ...]) -> LoadedModules:
        """This index where it still describes sys.modules, else a fresh one (a module was
        imported or dropped since, or other prefixes are asked for)."""
        if prefixes == self.prefixes and len(sys.modules) == self.count:
            return self
        return loaded_modules(prefixes)


def loaded_modules(prefixes: tuple[str, ...]) -> LoadedModules:
    modules = [(name, module) for name, module in list(sys.modules.items())
               if module is not None and name.startswith(prefixes)]
    files = {_source_file(module): name for name, module in modules}
    files.pop("", None)
    return LoadedModules(prefixes=prefixes, ids={id(module): name for name, module in modules},
                         files=files, count=len(sys.modules))


def install(*, trusted_roots: Iterable[Path], untrusted_roots: Iterable[Path],
            report: Callable[[str], None], report_call: Callable[[str], None],
            protected_prefixes: tuple[str, ...], loaded: LoadedModules | None = None) -> None:
    """Install the hook for the rest of this process's life.

    `trusted_roots`: folders whose code is the interpreter's, the installed packages' or the
    grader's; `untrusted_roots`: the submission's own file and folders (checked first, so a
    student folder inside a trusted one stays untrusted). `report` tells the zygote, once per
    distinct refusal in each task; `report_call` relays a forbidden package's call
    (checks/policy.py). `protected_prefixes`: module names whose code must not run again
    (torch, grader): a reload would replace what the grader wrapped or relies on; `loaded`
    indexes them where the caller has made that index already (the zygote, for its children).

    Everything the hook reads is bound here, in its closure: nothing a submission can reach
    (no module global, no builtin looked up at call time) changes what it decides.
    """
    trusted = tuple(str(root) + os.sep for root in trusted_roots)
    untrusted = tuple(str(root) for root in untrusted_roots)
    getframe, get_ident, modules = sys._getframe, _thread.get_ident, sys.modules
    fsdecode, realpath, basename = os.fsdecode, os.path.realpath, os.path.basename
    is_instance, text, get_attribute, any_of = isinstance, str, getattr, any
    code_type, function_type = CodeType, FunctionType
    watched, always, from_submission = WATCHED, ALWAYS_REFUSED, REFUSED_FROM_SUBMISSION
    frame_attributes, function_attributes = FRAME_ATTRIBUTES, FUNCTION_ATTRIBUTES
    hands_on, hands_on_stack, hands_on_frames = HANDS_ON, HANDS_ON_STACK, HANDS_ON_FRAMES
    hands_on_version, secret_files = HANDS_ON_VERSION, SECRET_PROC_FILES
    integrity_event, policy_event, version_event = INTEGRITY_EVENT, POLICY_EVENT, VERSION_EVENT
    subclass_event, task_event = SUBCLASS_EVENT, TASK_EVENT
    refused = Refused
    # Modules that exist now: running their code again is a reload.
    index = (loaded.current(protected_prefixes) if loaded is not None
             else loaded_modules(protected_prefixes))
    loaded_ids, files = index.ids, index.files
    busy: set[int] = set()
    reported: set[str] = set()

    def is_trusted_file(filename: str) -> bool:
        if filename.startswith(untrusted):
            return False
        return filename.startswith(trusted) or filename.startswith("<frozen ")

    def asked_by_submission(passing: tuple[tuple[str, str], ...] = hands_on) -> bool:
        frame: FrameType | None = getframe(3)  # 0 here, 1 check, 2 hook, 3 the event
        while frame is not None and any_of(
                part in frame.f_code.co_filename and function in ("", frame.f_code.co_name)
                for part, function in passing):
            frame = frame.f_back
        return frame is not None and not is_trusted_file(frame.f_code.co_filename)

    def refuse(what: str) -> None:
        if what not in reported:
            reported.add(what)
            report(what)
        raise refused(f"inplace-grader: {what} is not allowed in a graded submission")

    def trusted_function(target: Any) -> bool:
        """By where its code was compiled: `__module__` is the submission's to change."""
        if not is_instance(target, function_type):
            return False
        return is_trusted_file(target.__code__.co_filename)  # its own event: skipped (busy)

    def secret(path: str) -> bool:
        """/proc/<pid>/{mem,environ,pagemap} however named (`//proc`, a link, a relative
        path from a folder in /proc), or any such name opened relative to a descriptor."""
        name = basename(path)
        return name in secret_files and (realpath(path).startswith("/proc/")
                                         or not path.startswith("/"))

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
            if is_instance(code, code_type) and code.co_name == "<module>":
                reloaded = files.get(code.co_filename)
                if reloaded is not None and id(modules.get(reloaded)) in loaded_ids:
                    refuse(f"reloading {reloaded}")
        elif event == "open":
            path = args[0]
            if is_instance(path, (str, bytes)) and secret(fsdecode(path)):
                refuse(f"opening {fsdecode(path)}")
        elif event in from_submission:
            if asked_by_submission(hands_on_stack if event == "sys._getframe" else hands_on):
                refuse(event)
        elif event == "compile":
            # Only the immediate caller counts: importlib compiling a module's own source is
            # not the submission asking, even when the submission's `import` started it.
            filename = args[1]
            if (is_instance(filename, (str, bytes)) and is_trusted_file(fsdecode(filename))
                    and asked_by_submission(())):
                refuse("compiling code under a library's file name")
        elif event == "object.__getattr__":
            if args[1] in frame_attributes and asked_by_submission(hands_on_frames):
                refuse(f"reading .{args[1]}")
        elif args[1] in function_attributes and trusted_function(args[0]) \
                and asked_by_submission():  # object.__setattr__ / __delattr__ of a function
            refuse(f"replacing {get_attribute(args[0], '__qualname__', '?')}.{args[1]}")

    sys.addaudithook(hook)


def guard_version_counters() -> None:
    """Refuse, to the submission, setting a tensor's version counter by hand: after a write
    through `.data` (which autograd cannot see) it would pass the version check. torch's own
    code may still call them. Each guard only raises an audit event: the hook decides who
    asked, and nothing a submission can reach holds that decision. Installed before the
    tamper snapshot, which then watches them."""
    import torch

    for owner, name in ((torch._C._autograd, "_unsafe_set_version_counter"),
                        (torch._C, "_increment_version")):
        original = getattr(owner, name, None)
        if original is not None:
            setattr(owner, name, _guarded(original, name))


def _guarded(original: Callable[..., Any], name: str) -> Callable[..., Any]:
    event = sys.audit

    def guarded(*args: Any, **kwargs: Any) -> Any:
        event(VERSION_EVENT, name)  # the hook raises for the submission
        return original(*args, **kwargs)

    return guarded


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
