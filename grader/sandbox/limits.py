"""Process limits applied in the child before any student code runs."""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource

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
    nothing is reachable, not even the host's loopback. Needs root (CAP_SYS_ADMIN); in a
    container without it the call fails with EPERM and False is returned: the report then
    does not list the protection."""
    if os.geteuid() != 0:
        return False
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
