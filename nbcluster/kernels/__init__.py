"""L1: kernels, one file per op family, registered per device type."""
from nbcluster.kernels.registry import get_kernel_factory, has_kernel, register_kernel

__all__ = ["get_kernel_factory", "has_kernel", "register_kernel", "load_all"]


def load_all() -> None:
    """Imports every kernel family so the table is complete."""
    from nbcluster.kernels import array, control, math, nn, queue, random, state  # noqa: F401
