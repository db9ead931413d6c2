"""Logical and float-class kernels on numpy (CPU) and cupy (GPU): LogicalAnd,
LogicalOr, LogicalNot, IsNan, IsInf, IsFinite.

Rule: outputs are bool arrays of the broadcast (or input) shape; inputs are
never written.
"""
from __future__ import annotations

import numpy as np

from nbcluster.kernels.math import DEVICES
from nbcluster.runtime.kernel_table import register_kernel

_UFUNCS = {"LogicalAnd": "logical_and", "LogicalOr": "logical_or",
           "LogicalNot": "logical_not", "IsNan": "isnan", "IsInf": "isinf",
           "IsFinite": "isfinite"}


def _register(op_type: str, ufunc: str) -> None:
    @register_kernel(op_type, *DEVICES)
    def factory(node, device):
        fn = getattr(device.xp, ufunc)
        xp = device.xp

        def compute(ctx, *inputs):
            return (xp.asarray(fn(*inputs), dtype=np.bool_),)
        return compute


for _type, _ufunc in _UFUNCS.items():
    _register(_type, _ufunc)
