"""The signal targets a child may never reach, read from /proc for a process with threads."""

from __future__ import annotations

import os
import threading

from grader.sandbox.limits import protected_targets


def test_protected_targets_name_every_thread_the_group_and_kill_all() -> None:
    release = threading.Event()
    helper = threading.Thread(target=release.wait)
    helper.start()
    try:
        targets = protected_targets([os.getpid()])
        helper_tid = helper.native_id
    finally:
        release.set()
        helper.join()
    assert os.getpid() in targets
    assert helper_tid in targets  # kill(tid, SIGKILL) would end this whole process
    assert -os.getpgid(0) in targets
    assert -1 in targets
    assert 0 not in targets  # the child's own process group stays its to signal


def test_a_gone_process_adds_only_its_number() -> None:
    gone = 2**22 + 7  # above pid_max's default ceiling: no such process
    assert protected_targets([gone]) == sorted({gone, -1})
