"""Process limits applied in the child before any student code runs."""

from __future__ import annotations

import resource

from grader.sandbox.protocol import Job


def apply_rlimits(job: Job, *, cpu_budget_s: float, cuda: bool) -> list[str]:
    """Set hard limits (soft = hard) and return the names of those in force.

    The address-space limit is skipped on CUDA: the CUDA driver reserves far more virtual
    memory than it uses, and a cgroup is the right tool there.
    """
    applied: list[str] = []
    wanted: list[tuple[str, int, int]] = [
        ("cpu", resource.RLIMIT_CPU, int(cpu_budget_s)),
        ("file size", resource.RLIMIT_FSIZE, job.file_size_bytes),
        ("open files", resource.RLIMIT_NOFILE, job.open_files),
        ("core dumps", resource.RLIMIT_CORE, 0),
    ]
    if not cuda:
        wanted.append(("memory", resource.RLIMIT_AS, job.memory_bytes))
    for name, which, value in wanted:
        try:
            _, hard = resource.getrlimit(which)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))
            applied.append(name)
        except (ValueError, OSError):
            continue
    return applied
