"""This task process's own CPU use, resident memory and GPU memory, for GetStatus (psutil and
CuPy, loaded on first use).

Rule: the figures are the server process's, never the host's: a dashboard
must be able to tell which task is busy or growing. A task without GPU
devices reports no GPU memory at all (not zeros that look measured).
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


def gpu_memory(devices) -> list:
    """[(device name, bytes in use, bytes reserved, device bytes used, device bytes total)]
    for each GPU among `devices` (runtime.devices.Device values), read through the CuPy
    module the device computes with; [] when there is none."""
    out = []
    for d in devices:
        if d.device_type != "GPU" or d.ordinal is None:
            continue
        cupy = d.xp
        with cupy.cuda.Device(d.ordinal):
            pool = cupy.get_default_memory_pool()  # per device: the current one's
            free, total = cupy.cuda.runtime.memGetInfo()
            out.append((d.name, int(pool.used_bytes()), int(pool.total_bytes()),
                        int(total - free), int(total)))
    return out
