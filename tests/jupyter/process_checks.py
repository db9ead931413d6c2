"""Helpers for the Jupyter tests: is a process alive, wait for pids to go, stderr lines."""
from __future__ import annotations

import time


def alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids, timeout: float = 15.0) -> list:
    """Waits until none of `pids` is alive; returns those still alive at `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        left = [pid for pid in pids if alive(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def error_lines(text: str) -> list:
    """The non-empty lines of captured stderr (the magics' one-line errors)."""
    return [line for line in text.splitlines() if line.strip()]
