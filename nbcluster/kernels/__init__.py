"""L1: kernels, one file per op family, registered per device type."""
import importlib

from nbcluster.runtime.kernel_table import get_kernel_factory, has_kernel, register_kernel

__all__ = ["get_kernel_factory", "has_kernel", "register_kernel", "load_all"]

FAMILIES = ("array", "control", "fill", "io", "linalg", "math", "nn", "queue", "random",
            "reduction", "shapes", "slicing", "state", "training",
            "indexing", "logic", "accumulator", "summary", "data", "control_flow",
            "control_flow_tensor_array", "resource_variables", "functional",
            "tensor_list", "optional", "dynamic_partition")


def load_all() -> None:
    """Imports every op family and its kernels, so a server knows every op a client sends."""
    for family in FAMILIES:
        importlib.import_module(f"nbcluster.ops.{family}")
        importlib.import_module(f"{__name__}.{family}")
