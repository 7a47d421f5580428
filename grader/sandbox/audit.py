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
from pathlib import Path
from types import CodeType, FrameType, FunctionType, ModuleType
from typing import Any

ALWAYS_REFUSED = frozenset({"sys.setprofile", "sys.settrace", "sys._current_frames",
                            "sys.addaudithook"})
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
HANDS_ON = (("<frozen importlib.", ""), ("importlib/__init__.py", ""), ("/inspect.py", ""))
HANDS_ON_STACK = (*HANDS_ON, ("/traceback.py", ""))
HANDS_ON_FRAMES = (*HANDS_ON, ("/traceback.py", "walk_tb"))
# torch's public wrappers around the version counter: their caller is who asked.
HANDS_ON_VERSION = (*HANDS_ON, ("torch/autograd/graph.py", "increment_version"),
                    ("torch/autograd/grad_mode.py", ""))
INTEGRITY_EVENT = "inplace-grader.integrity"  # the grader's own findings, reported as they are
WATCHED = ALWAYS_REFUSED | REFUSED_FROM_SUBMISSION | {
    "object.__getattr__", "object.__setattr__", "object.__delattr__", "import", "exec",
    "compile", "open", INTEGRITY_EVENT}


class Refused(PermissionError):
    """What the submission's code sees when the hook refuses it."""


Attribution = Callable[[FrameType | None, tuple[tuple[str, str], ...]], bool]


def install(*, trusted_roots: Iterable[Path], untrusted_roots: Iterable[Path],
            report: Callable[[str], None], protected_prefixes: tuple[str, ...]) -> Attribution:
    """Install the hook for the rest of this process's life.

    `trusted_roots`: folders whose code is the interpreter's, the installed packages' or the
    grader's; `untrusted_roots`: the submission's own file and folders (checked first, so a
    student folder inside a trusted one stays untrusted). `report` tells the zygote, once per
    distinct refusal. `protected_prefixes`: module names whose code must not run again (torch,
    grader): a reload would replace what the grader wrapped or relies on.

    Returns the attribution it uses (is this frame, past the hands-on ones, the submission's
    code?), for the guards that are not audit events (guard_version_counters).
    """
    trusted = tuple(str(root) + os.sep for root in trusted_roots)
    untrusted = tuple(str(root) for root in untrusted_roots)
    getframe = sys._getframe
    get_ident = _thread.get_ident
    modules = sys.modules
    # Modules that exist now: running their code again is a reload.
    loaded = {id(module): name for name, module in list(modules.items())
              if module is not None and name.startswith(protected_prefixes)}
    files = {_source_file(module): name for name, module in list(modules.items())
             if module is not None and name.startswith(protected_prefixes)}
    files.pop("", None)
    busy: set[int] = set()
    reported: set[str] = set()

    def is_trusted_file(filename: str) -> bool:
        if filename.startswith(untrusted):
            return False
        return filename.startswith(trusted) or filename.startswith("<frozen ")

    def submission_frame(frame: FrameType | None,
                         hands_on: tuple[tuple[str, str], ...] = HANDS_ON) -> bool:
        while frame is not None and any(
                part in frame.f_code.co_filename and function in ("", frame.f_code.co_name)
                for part, function in hands_on):
            frame = frame.f_back
        return frame is not None and not is_trusted_file(frame.f_code.co_filename)

    def asked_by_submission(hands_on: tuple[tuple[str, str], ...] = HANDS_ON) -> bool:
        return submission_frame(getframe(3), hands_on)  # 0 here, 1 check, 2 hook, 3 event

    def refuse(what: str) -> None:
        if what not in reported:
            reported.add(what)
            report(what)
        raise Refused(f"inplace-grader: {what} is not allowed in a graded submission")

    def trusted_target(target: Any) -> bool:
        if isinstance(target, (type, FunctionType)):
            module = modules.get(getattr(target, "__module__", "") or "")
            return module is not None and is_trusted_file(_source_file(module))
        return False

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event not in WATCHED:
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
        if event == INTEGRITY_EVENT:
            report(str(args[0]) if args else "?")
        elif event in ALWAYS_REFUSED:
            refuse(event)
        elif event == "import":
            name = str(args[0])
            if name.split(".")[0] == "grader" and name not in modules:
                refuse(f"importing {name}")
        elif event == "exec":
            code = args[0]
            if isinstance(code, CodeType) and code.co_name == "<module>":
                reloaded = files.get(code.co_filename)
                if reloaded is not None and id(modules.get(reloaded)) in loaded:
                    refuse(f"reloading {reloaded}")
        elif event == "open":
            path = args[0]
            if isinstance(path, (str, bytes)) and _secret_proc_file(os.fsdecode(path)):
                refuse(f"opening {os.fsdecode(path)}")
        elif event in REFUSED_FROM_SUBMISSION:
            if asked_by_submission(HANDS_ON_STACK if event == "sys._getframe" else HANDS_ON):
                refuse(event)
        elif event == "compile":
            filename = args[1]
            if (isinstance(filename, (str, bytes)) and is_trusted_file(os.fsdecode(filename))
                    and asked_by_submission()):
                refuse("compiling code under a library's file name")
        elif event == "object.__getattr__":
            if args[1] in FRAME_ATTRIBUTES and asked_by_submission(HANDS_ON_FRAMES):
                refuse(f"reading .{args[1]}")
        elif trusted_target(args[0]) and asked_by_submission():  # __setattr__, __delattr__
            refuse(f"replacing {getattr(args[0], '__qualname__', '?')}.{args[1]}")

    sys.addaudithook(hook)
    return submission_frame


def guard_version_counters(attribution: Attribution, report: Callable[[str], None]) -> None:
    """Refuse, to the submission, setting a tensor's version counter by hand: after a write
    through `.data` (which autograd cannot see) it would pass the version check. torch's own
    code may still call them. Installed before the tamper snapshot, which then watches them."""
    import torch

    getframe = sys._getframe
    for owner, name in ((torch._C._autograd, "_unsafe_set_version_counter"),
                        (torch._C, "_increment_version")):
        original = getattr(owner, name, None)
        if original is None:
            continue

        def guarded(*args: Any, _call: Any = original, _name: str = name, **kwargs: Any) -> Any:
            if attribution(getframe(1), HANDS_ON_VERSION):
                what = f"setting a tensor's version counter by hand ({_name})"
                report(what)
                raise Refused(f"inplace-grader: {what} is not allowed in a graded submission")
            return _call(*args, **kwargs)

        setattr(owner, name, guarded)


def _source_file(module: ModuleType) -> str:
    return str(getattr(module, "__file__", None) or "")


def _secret_proc_file(path: str) -> bool:
    """/proc/<pid or self>/{mem,environ,pagemap} (also through task/<tid>/): another
    process's secrets, or this one's memory (the nonce, a previous job's remnants)."""
    parts = os.path.normpath(path).split(os.sep)
    return len(parts) >= 4 and parts[1] == "proc" and parts[-1] in SECRET_PROC_FILES


def progress_reporter(fd: int) -> Callable[[str], None]:
    """A report function that writes `T <what>` lines to the zygote, with `os.write` captured
    now (a submission may replace `os.write` later)."""
    write = os.write

    def report(what: str) -> None:
        try:  # noqa: SIM105 - no module lookups here: a submission may replace contextlib's
            write(fd, ("T " + " ".join(what.split())[:200] + "\n").encode())
        except OSError:
            pass  # the submission closed the pipe: the task fails for that instead

    return report
