"""Process checks for the launcher tests: alive (zombies count as gone), wait, kill by pid."""
from __future__ import annotations

import os
import signal
import time


def pid_alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for a reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def wait_gone(pids, timeout: float) -> list:
    """The pids still alive after `timeout` seconds (polled)."""
    deadline = time.monotonic() + timeout
    alive = [p for p in pids if pid_alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if pid_alive(p)]
    return alive


def kill_pids(pids) -> None:
    """SIGKILLs what is left of `pids` (cleanup after a failed assertion)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
