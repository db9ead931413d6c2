"""Fill kernels: Fill, ZerosLike, OnesLike (string tensors stay numpy objects on the host).

Rule: as in `kernels/array.py`, a kernel never writes to its inputs; it
returns fresh arrays.
"""
from __future__ import annotations

import numpy as np

from nbcluster.kernels.array import host_dims, invalid, module_for, shape_str
from nbcluster.runtime.kernel_table import register_kernel


@register_kernel("Fill", "CPU", "GPU")
def _fill(node, device):
    def compute(ctx, dims, value):
        dims = host_dims(device, dims, node, "dims")
        if value.ndim != 0:
            raise invalid(f"value must be a scalar, got shape {shape_str(value.shape)}", node)
        out = module_for(device, value).empty(dims, dtype=value.dtype)
        out[...] = value
        return (out,)
    return compute


def _like(fill_value, string_value):
    def factory(node, device):
        def compute(ctx, x):
            if not hasattr(x, "dtype"):  # a variant (kernels/tensor_list.py, optional.py)
                return (x.zeros_like(),)
            if x.dtype == object:
                out = np.empty(x.shape, dtype=object)
                out[...] = string_value
                return (out,)
            return (device.xp.full(x.shape, fill_value, dtype=x.dtype),)
        return compute
    return factory


register_kernel("ZerosLike", "CPU", "GPU")(_like(0, b""))
register_kernel("OnesLike", "CPU", "GPU")(_like(1, b"1"))
