"""Process limits applied in the child before any student code runs."""

from __future__ import annotations

import resource

from grader.sandbox.protocol import Unit


def apply_rlimits(unit: Unit) -> list[str]:
    """Set hard limits (soft = hard) and return the names of those in force.

    The address-space limit is skipped on CUDA: the CUDA driver reserves far more virtual
    memory than it uses, and a cgroup is the right tool there.
    """
    applied: list[str] = []
    cpu_s = int(unit.timeout_s) + 5
    wanted: list[tuple[str, int, int]] = [
        ("cpu", resource.RLIMIT_CPU, cpu_s),
        ("file size", resource.RLIMIT_FSIZE, unit.file_size_bytes),
        ("open files", resource.RLIMIT_NOFILE, unit.open_files),
        ("core dumps", resource.RLIMIT_CORE, 0),
    ]
    if unit.device != "cuda":
        wanted.append(("memory", resource.RLIMIT_AS, unit.memory_bytes))
    for name, which, value in wanted:
        try:
            _, hard = resource.getrlimit(which)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))
            applied.append(name)
        except (ValueError, OSError):
            continue
    return applied
