"""Lets glibc's malloc keep freed blocks of up to 32 MiB for reuse: once per process,
by every Server and every in-process session.

Why: a step allocates arrays of the same sizes every time (received tensors,
a weight's update, a MatMul's output). By default each block past 128 KiB
is a fresh mmap, given back on free, so a 1 MiB receive cost ~300 page
faults (about a millisecond of CPU) and a 784x256 float32 update 335 µs
instead of 30. GLIBC_TUNABLES acts only at process start; mallopt acts now.
Rule: a GLIBC_TUNABLES malloc threshold of the user's wins; without glibc,
nothing happens.
"""
from __future__ import annotations

import os
import threading

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD = 32 << 20  # glibc's largest allowed value
_TRIM_THRESHOLD = 256 << 20
_lock = threading.Lock()
_done = False


def keep_freed_memory(environ=None) -> bool:
    """Raises malloc's mmap and trim thresholds; whether this process now has them."""
    global _done
    environ = os.environ if environ is None else environ
    with _lock:
        if _done:
            return True
        tunables = environ.get("GLIBC_TUNABLES", "")
        if "mmap_threshold" in tunables or "trim_threshold" in tunables:
            return False
        try:
            import ctypes
            mallopt = ctypes.CDLL(None).mallopt
        except (OSError, AttributeError):
            return False
        _done = bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and \
            bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
        return _done
