"""Tries to SIGKILL the grader: the worker that forked it, the grading process above that,
their threads (kill() given a thread's id ends the whole process), their process groups, every
process it may (kill(-1)), and the grader again through a pidfd and through rt_sigqueueinfo.

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


def _parent_of(pid):
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[1])


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


def zero_grad(params, set_to_none=False):
    worker = os.getppid()
    grader = _parent_of(worker)
    threads = [int(t) for pid in (worker, grader) for t in os.listdir(f"/proc/{pid}/task")]
    targets = {worker, grader, -os.getpgid(worker), -os.getpgid(grader), *threads}
    outcomes = {_refused(lambda sig, t=t: os.kill(t, sig)) for t in targets}
    outcomes.add(_refused(lambda sig: os.kill(-1, sig)))
    outcomes.add(_refused(_sigqueue(grader)))
    outcomes.add(_refused(_pidfd(grader)))
    raise RuntimeError("kill outcome=" + ",".join(sorted(outcomes)) + ".")
