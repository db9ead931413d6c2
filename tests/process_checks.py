"""Process checks shared by the tests: alive (zombies count as gone), wait, kill by pid."""
from __future__ import annotations

import os
import signal
import time

# Whether a pid runs (a zombie, or a main thread gone while others run, counts as not):
# the same rule the sidebar's stop waits by, so tests and it agree on "gone".
from nbcluster.launch.records import alive

__all__ = ["alive", "wait_gone", "kill_pids", "stop_process", "error_lines", "process_table"]


def wait_gone(pids, timeout: float = 15.0) -> list:
    """Waits until none of `pids` is alive; returns those still alive at `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        left = [pid for pid in pids if alive(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def kill_pids(pids) -> None:
    """SIGKILLs what is left of `pids` (cleanup after a failed assertion)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def stop_process(pid: int, timeout: float = 30.0) -> None:
    """SIGSTOPs `pid` and returns once every one of its threads is stopped.

    The signal takes effect when each thread is next scheduled, which on a
    loaded host came after a call to the task was already answered (or had
    run for a while): what a test measures from here is the stopped task's.
    Raises TimeoutError if some thread still runs after `timeout` seconds.
    """
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while True:
        states = _thread_states(pid)
        if states and all(state in "Tt" for state in states):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"pid {pid} still has running threads ({states}) "
                               f"{timeout:g}s after SIGSTOP")
        time.sleep(0.01)


def _thread_states(pid: int) -> list:
    """The state letter of each thread of `pid` ("T": stopped), from /proc."""
    states = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return states
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        except (OSError, IndexError):  # a thread that ended meanwhile
            continue
    return states


def error_lines(text: str) -> list:
    """The non-empty lines of captured stderr (the magics' one-line errors)."""
    return [line for line in text.splitlines() if line.strip()]


def process_table() -> dict:
    """pid -> (ppid, argv) for every process in /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except (OSError, IndexError, ValueError):  # gone meanwhile, or not ours to read
            continue
        table[int(entry)] = (ppid, argv)
    return table
