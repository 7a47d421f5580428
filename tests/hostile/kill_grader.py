"""Tries to SIGKILL the grader: the worker that forked it, the grading process (its pid is
filled in by the test, as an attacker could learn it from a log), their threads (kill() given a
thread's id ends the whole process) and process groups where it can see them, every process it
may (kill(-1)), and the grader again through a pidfd and through rt_sigqueueinfo. In a process
namespace of its own it sees neither (its parent is pid 0 there), and a number it sends names a
process of its own namespace, not the host's: the filter refuses those numbers all the same.

Each target is first probed with signal 0, which harms nothing: a SIGKILL follows only where
the probe was refused, so a missing protection shows up as OPEN in the message and never kills
anything on the machine that runs the tests."""

from __future__ import annotations

import ctypes
import os
import signal

import torch


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)


def _refused(send):
    try:
        send(0)
    except OSError as exc:
        if exc.errno != 1:  # EPERM is the filter; anything else is a different failure
            return type(exc).__name__
    else:
        return "OPEN"
    try:
        send(signal.SIGKILL)
    except OSError as exc:
        return type(exc).__name__
    return "KILLED"


def _sigqueue(pid):
    libc = ctypes.CDLL(None, use_errno=True)
    number = {"x86_64": 129, "aarch64": 138}[os.uname().machine]  # SYS_rt_sigqueueinfo

    def send(sig):
        info = (ctypes.c_int * 32)()
        info[0], info[2] = sig, -1  # si_signo, si_code = SI_QUEUE
        if libc.syscall(number, pid, sig, info) != 0:
            raise OSError(ctypes.get_errno(), "rt_sigqueueinfo")
    return send


def _pidfd(pid):
    def send(sig):
        fd = os.pidfd_open(pid)
        try:
            signal.pidfd_send_signal(fd, sig)
        finally:
            os.close(fd)
    return send


def _seen(pid):
    """The pid, its threads and its process group, as far as this process can see them."""
    found = {pid}
    try:
        found.add(-os.getpgid(pid))
        found.update(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        pass
    return found


def zero_grad(params, set_to_none=False):
    grader = @GRADER_PID@
    worker = os.getppid()  # 0 in a process namespace of its own
    targets = _seen(grader) | (_seen(worker) if worker else set())
    outcomes = {_refused(lambda sig, t=t: os.kill(t, sig)) for t in targets}
    outcomes.add(_refused(lambda sig: os.kill(-1, sig)))
    outcomes.add(_refused(_sigqueue(grader)))
    outcomes.add(_refused(_pidfd(grader)))
    raise RuntimeError("kill outcome=" + ",".join(sorted(outcomes)) + ".")
