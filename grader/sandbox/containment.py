"""Containment: nothing a submission starts outlives its grading or sees the grader's processes.

Three mechanisms, strongest first; the zygote uses the first one the host allows and the report
names it:

- **process namespace** (root, or any user where the kernel allows user namespaces): each
  child is pid 1 of a PID namespace of its own, with a /proc of its own. Without root the
  zygote first enters a user namespace of its own (`enter_user_namespace`), which grants it,
  and only it, the right to make PID namespaces; a student's laptop gets the same containment
  as a root grading server. When it ends, the kernel ends everything left in the
  namespace, however it was detached; from inside, no process of the grader, of the worker or
  of another student exists (no pid to signal, no /proc entry to read).
- **uid sweep** (root without CAP_SYS_ADMIN, where children drop to a uid of their own): after
  the job, a helper that becomes the job's uid sends `kill(-1, SIGKILL)` until nothing of that
  uid is left.
- **subreaper sweep** (always, last): the zygote is a child subreaper, so orphans are reparented
  to it; it kills its children until none are left (bounded in time, not in generations).

A fork into a namespace of its own, with the child's private /proc, costs next to nothing over
a plain fork (docs/sandbox.md#what-it-costs); a chain of processes in new sessions, each waiting
on the next, outlasted the old bounded sweep and is ended by the namespace
(tests/hostile/process_chain.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import time
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

SWEEP_SECONDS = 2.0  # the subreaper sweep gives up after this long (a fork bomb without limits)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def become_subreaper() -> bool:
    try:
        return _libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def enter_user_namespace() -> bool:
    """Make this process (the zygote, before it starts any thread) pid 1 of a PID namespace
    inside a user namespace of its own; True in the process that goes on as the zygote.

    `unshare(CLONE_NEWUSER)` needs no privilege where the kernel allows user namespaces; it
    maps only this process's own uid and gid, so files, limits and signals are what they
    were, while the namespace's owner may make the per-child PID namespaces (PidNamespaces).
    A PID namespace applies to the caller's next child, so the caller forks: the parent stays
    behind only to wait and pass on the exit status (the grading process started it and ends
    it by its pid); the child, which dies with it (PR_SET_PDEATHSIG), is the zygote, in a
    mount namespace of its own with a /proc that lists only its namespace (so that the pids
    it reads there are the pids it may signal). False where a step before the fork is
    refused: the process may be in a user namespace of its own, with nothing else changed,
    and the sweeps apply. Once it forks there is no way back, so `user_namespaces_work`
    tries the whole route in a throwaway process first."""
    uid, gid = os.geteuid(), os.getegid()
    libc = _libc()
    try:
        if libc.unshare(CLONE_NEWUSER) != 0:
            return False
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                           ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
        if libc.unshare(CLONE_NEWPID) != 0:
            return False
    except (OSError, AttributeError):
        return False
    alive_read, alive_write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid != 0:  # the parent: waits, then leaves with the zygote's status
        os.close(alive_read)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        os._exit(code if code >= 0 else 128 - code)
    os.close(alive_write)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # The parent may have died before the line above: its end of the pipe is then closed.
    if select.select([alive_read], [], [], 0)[0]:
        os._exit(1)
    os.close(alive_read)
    return private_proc()


def user_namespaces_work() -> bool:
    """Whether `enter_user_namespace` goes through here, private /proc included: tried in a
    forked process that ends at once (a few milliseconds, once per worker), because a failure
    after its fork could not be undone."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if enter_user_namespace() else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


class PidNamespaces:
    """Forks each child as pid 1 of a new PID namespace (zygote side).

    `unshare(CLONE_NEWPID)` changes only the namespace of the caller's *next* children, so the
    zygote unshares, forks, then joins its own namespace again with `setns` (allowed to root in
    its own namespace), ready for the next child.
    """

    def __init__(self) -> None:
        self._own: int | None = None
        try:  # refused without root, unless this process owns its user namespace
            self._own = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
            libc = _libc()
            if libc.unshare(CLONE_NEWPID) != 0 or libc.setns(self._own, CLONE_NEWPID) != 0:
                raise OSError(ctypes.get_errno(), "unshare/setns")
        except (OSError, AttributeError):
            if self._own is not None:
                os.close(self._own)
            self._own = None

    @property
    def available(self) -> bool:
        return self._own is not None

    def fork(self) -> int:
        """os.fork(), the child in a namespace of its own where available."""
        if self._own is None:
            return os.fork()
        libc = _libc()
        if libc.unshare(CLONE_NEWPID) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWPID)")
        pid = os.fork()
        if pid != 0 and libc.setns(self._own, CLONE_NEWPID) != 0:
            # The zygote could fork no further child into a live namespace: a worker failure.
            raise OSError(ctypes.get_errno(), "setns back to the zygote's PID namespace")
        return pid


def private_proc() -> bool:
    """In a process that is pid 1 of its namespace (a child; the zygote in a user namespace):
    a mount namespace of its own with a fresh /proc, which lists only this namespace's
    processes (not the grader's: no environ, no fds, no pids to aim at). In a child it must
    run before the file-system view is built (it grants /proc)."""
    if os.getpid() != 1:
        return False
    libc = _libc()
    try:
        return (libc.unshare(CLONE_NEWNS) == 0
                and libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0
                and libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                               None) == 0)
    except (OSError, AttributeError):
        return False


def die_with_parent(channel: int) -> bool:
    """In a child: end with the zygote (killed with the grading process, or by Ctrl-C), not
    run on to its CPU limit with nobody left to stop it. Set after the uid and capability
    drops, which clear it; a zygote that died before this leaves the progress pipe, `channel`,
    without a reader, and the child ends now. True where the kernel took the setting."""
    if _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return False
    poller = select.poll()
    poller.register(channel, select.POLLOUT)
    if any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0)):
        os._exit(1)
    return True


def own_children() -> list[int]:
    """Pids whose parent is this process (orphans reparented here included)."""
    pids: list[int] = []
    for task in Path("/proc/self/task").iterdir():
        try:
            pids += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return pids


def sweep_children(*, seconds: float = SWEEP_SECONDS) -> int:
    """SIGKILL and reap every child of this subreaper until none is left, or `seconds` pass;
    how many were killed. Each pass also catches what the killed ones had forked meanwhile
    (their orphans are reparented here), so a chain of any length ends."""
    killed = 0
    give_up = time.monotonic() + seconds
    while (pids := own_children()) and time.monotonic() < give_up:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        for pid in pids:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return killed


def sweep_uid(uid: int) -> None:
    """End every process of `uid` (a job's own uid): a helper drops to it and sends
    kill(-1, SIGKILL), which reaches every process of that uid and no other, until none is
    left. Forked from the zygote; only ever called with an unprivileged uid."""
    if uid <= 0:
        raise ValueError("kill(-1) is only ever sent as an unprivileged uid")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            for _ in range(100):
                os.kill(-1, signal.SIGKILL)  # as `uid`: its own processes only, not this one
            code = 0
        except ProcessLookupError:
            code = 0  # nothing of that uid is left
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.waitpid(pid, 0)

