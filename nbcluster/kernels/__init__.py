"""L1: kernels, one file per op family, registered per device type."""
import importlib

from nbcluster.kernels.registry import get_kernel_factory, has_kernel, register_kernel

__all__ = ["get_kernel_factory", "has_kernel", "register_kernel", "load_all"]

FAMILIES = ("array", "control", "math", "nn", "queue", "random", "reduction", "state")


def load_all() -> None:
    """Imports every kernel family so the table is complete."""
    for family in FAMILIES:
        importlib.import_module(f"{__name__}.{family}")
