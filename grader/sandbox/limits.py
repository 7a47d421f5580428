"""Process limits applied in the child before any student code runs."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import resource
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grader.errors import UsageError
from grader.sandbox.probes_contract import lab_folders
from grader.sandbox.protocol import Job


def apply_rlimits(job: Job, *, cpu_budget_s: float, cuda: bool) -> list[str]:
    """Set hard limits (soft = hard) and return the names of those in force.

    The address-space limit is skipped on CUDA: the CUDA driver reserves far more virtual
    memory than it uses, and a cgroup is the right tool there.
    """
    applied: list[str] = []
    wanted: list[tuple[str, int, int]] = [
        ("cpu time limit", resource.RLIMIT_CPU, int(cpu_budget_s)),
        ("file size limit", resource.RLIMIT_FSIZE, job.file_size_bytes),
        ("open files limit", resource.RLIMIT_NOFILE, job.open_files),
        ("no core dumps", resource.RLIMIT_CORE, 0),
    ]
    if not cuda:
        wanted.append(("memory limit", resource.RLIMIT_AS, job.memory_bytes))
    for name, which, value in wanted:
        try:
            _, hard = resource.getrlimit(which)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))
            applied.append(name)
        except (ValueError, OSError):
            continue
    return applied


CLONE_NEWNET = 0x40000000


def isolate_network() -> bool:
    """Move this (forked, single-threaded) child into a network namespace of its own, where
    nothing is reachable, not even the host's loopback. Needs CAP_SYS_ADMIN (root, or the
    zygote's own user namespace); in a container without it the call fails with EPERM and
    False is returned: the report then does not list the protection."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.unshare(CLONE_NEWNET) == 0
    except (OSError, AttributeError):
        return False


def release_freed_memory() -> None:
    """Hand freed heap pages back to the system: glibc keeps them otherwise, so a long batch
    creeps up, and a zygote would make every child inherit (and fork) them."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


# A uid no account uses: RLIMIT_NPROC counts processes per uid across the machine, and a
# leftover-process sweep by uid must not touch anybody else's. Set INPLACE_GRADER_UID to
# choose another, or to "off" to keep the child's uid. Each batch worker drops to its own uid
# from there up (base + worker slot), so that students graded side by side can neither signal
# each other's processes nor share one process count.
DEFAULT_UID = 64_213
UID_SLOTS = 1024  # workers a base uid leaves room for
UIDS_PER_WORKER = 8  # each worker's jobs take turns over this many uids of its own
RESERVED_UIDS = (65_534, 65_535)  # nobody, and (uint16) -1: never dropped to
CHILD_PROCESSES = 256  # a fork bomb stops here (threads count too; root is exempt)


class UidError(UsageError):
    """INPLACE_GRADER_UID is not a uid the grader may drop to: one line for the user."""


def configured_uid(environ: Mapping[str, str]) -> int | None:
    """The base uid from INPLACE_GRADER_UID: DEFAULT_UID when unset, None for "off"."""
    wanted = environ.get("INPLACE_GRADER_UID", "").strip()
    if not wanted:
        return DEFAULT_UID
    if wanted.lower() == "off":
        return None
    top = 2**31 - 1 - UID_SLOTS * UIDS_PER_WORKER - len(RESERVED_UIDS)
    if not wanted.isdigit() or not 0 < int(wanted) <= top:
        raise UidError(f"INPLACE_GRADER_UID={wanted!r}: expected an unused uid above 0 (0 is "
                       f"root, which would drop nothing) and below {top + 1}, or off")
    return int(wanted)


def _nth_uid(base: int, n: int) -> int:
    """The n-th uid from `base` on (0-based), stepping over the reserved ones."""
    uid = base + n
    for reserved in RESERVED_UIDS:
        if base <= reserved <= uid:
            uid += 1
    return uid


def worker_uid(base: int, slot: int) -> int:
    """The first uid of batch worker `slot` (0, 1, ...): each worker has UIDS_PER_WORKER."""
    if not 0 <= slot < UID_SLOTS:
        raise UidError(f"worker {slot}: at most {UID_SLOTS} workers drop to their own uid")
    return _nth_uid(base, slot * UIDS_PER_WORKER)


# Root's (slots matter only for the uid drop): /run, or where /run is read-only (a
# container's), one fixed folder in /tmp, never $TMPDIR (two runs must find the same locks).
SLOT_LOCKS = (Path("/run/inplace-grader-slots"), Path("/tmp/inplace-grader-slots-0"))


def slot_folder(candidates: tuple[Path, ...] = SLOT_LOCKS) -> Path:
    """The first of `candidates` that is, or can be made, a folder private to this user."""
    for folder in candidates:
        with contextlib.suppress(FileExistsError, OSError):
            folder.mkdir(mode=0o700)
        try:
            info = os.lstat(folder)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
            raise UidError(f"{folder}: not a private folder of this user; remove it")
        return folder
    raise UidError(f"no folder for the uid slots' locks ({', '.join(map(str, candidates))})")


def claim_slot(first: int, *, folder: Path | None = None) -> tuple[int, int]:
    """(slot, descriptor): the first uid slot from `first` on that no other process on this
    machine holds, held (an flock) until every copy of the descriptor is closed (pass it to
    the zygote: Sandbox(hold=...)). Dask workers on one host each start sandboxes of their
    own; two that dropped to the same uids could end each other's jobs (the uid sweep) or
    signal them."""
    folder = slot_folder() if folder is None else slot_folder((folder,))
    for slot in range(first, UID_SLOTS):
        fd = os.open(folder / f"{slot}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        except BaseException:
            os.close(fd)
            raise
        return slot, fd
    raise UidError(f"all {UID_SLOTS} worker uid slots of this machine are taken")


def held_slot() -> tuple[int, int | None]:
    """(uid slot, its lock's descriptor or None) for a new sandbox: as root, the first slot no
    other process on this machine holds (two `grade` runs, or Dask workers, side by side);
    without root its children keep the grader's uid, and any slot does."""
    if os.geteuid() != 0:
        return 0, None
    return claim_slot(0)


def job_uid(first: int, job: int) -> int:
    """The uid of a worker's `job`-th job, given the worker's first uid: consecutive jobs of
    one worker never share a uid, so nothing one job left running can signal the next."""
    return _nth_uid(first, job % UIDS_PER_WORKER)


def python_readable_by_others() -> bool:
    """Whether another uid can run this Python and torch (a pyenv under /root 0700 cannot:
    lazy imports would fail after the drop)."""
    needed = [sys.prefix, sys.base_prefix, torch_dir()]  # a venv's stdlib is in base_prefix
    return all(readable_by_others(Path(path)) for path in needed)


def choose_uid(environ: Mapping[str, str] | None = None, *, slot: int = 0) -> int | None:
    """The uid children drop to: only when running as root, and only where that uid can read
    the Python installation."""
    base = configured_uid(os.environ if environ is None else environ)
    if base is None or os.geteuid() != 0 or not python_readable_by_others():
        return None
    return worker_uid(base, slot)


def torch_dir() -> str:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    return str(Path(spec.origin).parent) if spec and spec.origin else sys.prefix


def readable_by_others(path: Path) -> bool:
    """Every folder down to `path` searchable, and `path` readable, by any uid."""
    path = path.resolve()
    for folder in [*reversed(path.parents), path]:
        try:
            mode = folder.stat().st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH or (folder == path and not mode & stat.S_IROTH):
            return False
    return True


def drop_privileges(uid: int) -> list[str]:
    """Become `uid` (group too, no supplementary groups) for good; the protections it adds."""
    try:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    except OSError:
        return []
    applied = [f"uid drop ({uid})"]
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NPROC, (CHILD_PROCESSES, CHILD_PROCESSES))
        applied.append("process count limit")
    return applied


PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 24, 47, 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> list[str]:
    """Give up every capability for good: the bounding and ambient sets emptied, then the
    effective, permitted and inheritable ones, with no_new_privs so nothing regains them. A
    child that stays root (no uid drop), or one in the zygote's user namespace, would
    otherwise keep CAP_SYS_ADMIN and CAP_SYS_PTRACE there: enough to move its private /proc
    aside where seccomp or Landlock is missing. The child needs none after its namespaces and
    limits are in place."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        # Refused (EPERM) without CAP_SETPCAP, when there is nothing to drop anyway, and
        # EINVAL past this kernel's last capability: either way, on to the next.
        for capability in range(64):
            libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
        libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
        data = (_CapData * 2)()
        dropped = libc.capset(ctypes.byref(header), data) == 0
    except (OSError, AttributeError):
        return []
    finally:
        ctypes.set_errno(0)  # landlock's wrapper reads errno, not prctl's return value
    return ["no capabilities"] if dropped else []


# What a child may read besides the Python installation, its submission and its scratch folder
# (Landlock: everything else, such as solutions/, hidden cases and other students' files, is
# refused by the kernel, root included).
SYSTEM_READABLE = ("/usr", "/lib", "/lib64", "/bin", "/proc", "/sys/devices/system/cpu",
                   "/dev/null", "/dev/zero", "/dev/urandom", "/etc/ld.so.cache",
                   "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf")


def python_paths() -> list[Path]:
    """The interpreter's own folders, the installed packages, this grader package and the
    labs' folders outside it (INPLACE_GRADER_LABS): the instructor's, trusted like the
    package (the audit hook's trusted roots; readable in the child's file-system view)."""
    import site

    import grader

    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages(),
               str(Path(grader.__file__).resolve().parent), torch_dir(),
               *map(str, lab_folders(os.environ))}
    return sorted(Path(f) for f in folders)


def filesystem_view(*, readable: list[Path], writable: list[Path], devices: bool) -> Any:
    """A Landlock ruleset that lets a process read only `readable` and write only `writable`
    (`devices`: all of /dev, for the CUDA driver). Built while the child may still open every
    path (before the uid drop); `apply` it after. None where the kernel or package lacks it."""
    try:
        import landlock
        from landlock import FSAccess

        if landlock.landlock_abi_version() < 1:
            return None
        ruleset = landlock.Ruleset()
        read = FSAccess.READ_FILE | FSAccess.READ_DIR | FSAccess.EXECUTE
        grants = [(path, read) for path in readable]
        grants += [(path, FSAccess.all()) for path in writable]
        if devices:
            grants.append((Path("/dev"), FSAccess.all()))
        for path, rights in grants:
            with contextlib.suppress(OSError):  # an absent path needs no rule
                ruleset.allow(path, rules=rights if path.is_dir() else rights & FSAccess.all_file())
    except Exception:  # an old kernel, no package: this layer is absent
        return None
    return ruleset


def apply_view(ruleset: Any) -> bool:
    """From here on, this process and what it starts see only the view; files opened before
    (the results, the log) stay usable."""
    if ruleset is None:
        return False
    try:
        ruleset.apply()
    except Exception:
        return False
    return True


def protected_targets(pids: list[int]) -> list[int]:
    """Every number a signal could reach `pids` by: each pid, its threads' ids (`kill` given
    any thread's id signals the whole process, and SIGKILL to one thread ends it), and its
    process group as `-pgid`. Read from /proc before the file-system view hides it."""
    targets: set[int] = set()
    for pid in pids:
        targets.add(pid)
        with contextlib.suppress(OSError):
            targets.add(-os.getpgid(pid))
        with contextlib.suppress(OSError):
            targets.update(int(tid) for tid in os.listdir(f"/proc/{pid}/task"))
    targets.add(-1)  # every process the caller may signal
    targets.discard(0)
    return sorted(targets)


# Calls a student's function has no use for, refused outright: sockets of every family (the
# network where no namespace is available, and path-named Unix sockets, which neither a network
# namespace nor Landlock mediates), tracing or reading other processes, signals that name a
# process by a number not in the protected list, and leaving the namespaces and mounts the
# child was given (a fresh /proc over the host's).
REFUSED_SYSCALLS = ("socket", "socketpair", "ptrace", "process_vm_readv", "process_vm_writev",
                    "tkill", "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "mount",
                    "umount2", "pivot_root", "setns", "unshare", "chroot", "open_by_handle_at",
                    # the new mount API, which moves mounts without mount(2)
                    "open_tree", "move_mount", "fsopen", "fsmount", "fsconfig", "fspick",
                    "mount_setattr")
SIGNAL_SYSCALLS = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
PR_SET_PDEATHSIG = 1  # prctl option: the child's "ends with the worker" (containment.py)


def restrict_syscalls(protected: list[int], *, channels: tuple[int, ...] = ()) -> list[str]:
    """seccomp: REFUSED_SYSCALLS get EPERM, no signal reaches any of `protected`
    (protected_targets: the grader, the worker that forked this child, their threads and
    groups, and `kill(-1)`), and the progress `channels` can be neither closed nor replaced
    (`dup2` of a pipe of the submission's own over it would let it filter what the worker
    hears), and the parent-death signal the child set cannot be cleared (it would outlive a
    killed worker).

    A thread the grader starts after this child was forked is not in the list; where the child
    is in a process namespace of its own it cannot name any of them, and where it drops to its
    own uid the kernel refuses those too. Returns the protections added; none where libseccomp
    or the kernel refuses.
    """
    try:
        import errno

        import pyseccomp as seccomp

        rules = seccomp.SyscallFilter(seccomp.ALLOW)
        deny = seccomp.ERRNO(errno.EPERM)
        for name in REFUSED_SYSCALLS:
            with contextlib.suppress(OSError, RuntimeError, ValueError):  # not on this machine
                rules.add_rule(deny, name)
        for target in protected:
            # pid arguments are 32-bit signed ints: -1 and -pgid arrive as two's complement,
            # and the upper half of the register is not defined.
            word = target & 0xFFFFFFFF
            for name in SIGNAL_SYSCALLS:
                rules.add_rule(deny, name, seccomp.Arg(0, seccomp.MASKED_EQ, 0xFFFFFFFF, word))
        rules.add_rule(deny, "prctl", seccomp.Arg(0, seccomp.EQ, PR_SET_PDEATHSIG))
        for name, argument in (("close", 0), ("dup2", 1), ("dup3", 1)):
            for channel in channels:
                with contextlib.suppress(OSError, RuntimeError, ValueError):  # no dup2: arm64
                    rules.add_rule(deny, name, seccomp.Arg(argument, seccomp.EQ, channel))
        rules.load()
    except Exception:  # no libseccomp, an old kernel: these layers are absent
        return []
    return ["no sockets", "no ptrace", "no signals to the grader", "no namespace changes"]


def warm_up_layers() -> None:
    """Import the layers' libraries in the zygote: a child under Landlock could not load them
    (ctypes finds libseccomp by running ldconfig)."""
    for module in ("landlock", "pyseccomp"):
        with contextlib.suppress(Exception):
            __import__(module)
