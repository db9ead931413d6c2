"""The devices of one task: CPUs through numpy, GPUs through CuPy when present."""
from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from nbcluster.framework.device_spec import canonical_name


@dataclass(frozen=True)
class Device:
    """One device of a task. `xp` is the array module its kernels compute with."""

    name: str                 # /job:w/replica:0/task:0/device:CPU:0
    device_type: str          # "CPU" | "GPU"
    index: int
    xp: Any = field(repr=False, compare=False)
    memory_limit: int = 0
    incarnation: int = 0
    description: str = ""
    # The only directory its checkpoint kernels may touch (kernels/file_root.py);
    # None: anywhere (the in-process Session(""), the user's own process).
    file_root: Optional[str] = field(default=None, compare=False)
    # A GPU's CuPy device id (in CUDA_VISIBLE_DEVICES' numbering); None for a CPU.
    ordinal: Optional[int] = field(default=None, compare=False)

    def to_numpy(self, value) -> np.ndarray:
        """A kernel output as a host ndarray (copies off the GPU)."""
        if self.device_type == "GPU" and hasattr(value, "get"):
            return value.get()
        return value

    def from_numpy(self, value):
        """A host value as this device's array type (copies onto the GPU)."""
        if self.device_type == "GPU" and isinstance(value, np.ndarray) and value.dtype != object:
            return self.xp.asarray(value)
        return value


def new_incarnation() -> int:
    """A random nonzero 64-bit id that tells restarted tasks apart."""
    return random.SystemRandom().getrandbits(63) | 1


def _cupy_device_count() -> int:
    if os.environ.get("NBCLUSTER_DISABLE_GPU"):
        return 0
    try:
        import cupy
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - no CuPy, no driver, or no GPU: all mean "none"
        return 0


def local_devices(job: str, task: int, device_count: Optional[dict] = None,
                  visible_gpus: str = "", replica: int = 0,
                  file_root: Optional[str] = None) -> list[Device]:
    """The devices a task offers: `device_count` as in ConfigProto.device_count;
    `file_root` confines their checkpoint files (see Device.file_root)."""
    device_count = dict(device_count or {})
    incarnation = new_incarnation()
    devices = []
    memory = _host_memory()
    for i in range(max(1, int(device_count.get("CPU", 1)))):
        devices.append(Device(canonical_name(job, replica, task, "CPU", i), "CPU", i, np,
                              memory, incarnation, "numpy", file_root))
    wanted_gpus = device_count.get("GPU")
    if wanted_gpus == 0:
        return devices
    available = _cupy_device_count()
    if not available:
        return devices
    import cupy
    ids = [int(v) for v in visible_gpus.split(",") if v.strip()] if visible_gpus \
        else list(range(available))
    if wanted_gpus is not None:
        ids = ids[:int(wanted_gpus)]
    for i, physical in enumerate(ids):
        with cupy.cuda.Device(physical):
            free, total = cupy.cuda.runtime.memGetInfo()
            props = cupy.cuda.runtime.getDeviceProperties(physical)
        desc = f"device: {physical}, name: {props['name'].decode()}, cupy"
        devices.append(Device(canonical_name(job, replica, task, "GPU", i), "GPU", i,
                              cupy, int(total), incarnation, desc, file_root,
                              ordinal=physical))
    return devices


def _host_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0
