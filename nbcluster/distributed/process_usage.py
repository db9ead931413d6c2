"""This task process's own CPU use and resident memory, for GetStatus (psutil, loaded on first use).

Rule: the figures are the server process's, never the host's: a dashboard
must be able to tell which task is busy or growing.
"""
from __future__ import annotations

import threading


class ProcessUsage:
    """CPU percent since the previous `sample()` and resident bytes, of this process."""

    def __init__(self) -> None:
        self._process = None
        self._lock = threading.Lock()  # psutil's CPU interval is per Process object

    def sample(self) -> tuple:
        """(cpu_percent, rss_bytes). CPU percent is of one core (200: two busy), over the
        time since the previous call; the first call gives 0.0."""
        import psutil  # only a server that is asked its status needs it
        with self._lock:
            if self._process is None:
                self._process = psutil.Process()
            with self._process.oneshot():
                return self._process.cpu_percent(None), self._process.memory_info().rss
