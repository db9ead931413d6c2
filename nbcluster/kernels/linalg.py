"""Linear-algebra kernels on numpy (CPU) and cupy (GPU): MatMul, BatchMatMulV2.

Rule: as in `kernels/math.py`, a kernel never writes to its inputs (a
transpose is a view, an adjoint a new array).
"""
from __future__ import annotations

import numpy as np

from nbcluster.kernels.math import DEVICES
from nbcluster.runtime import row_split
from nbcluster.runtime.blas_width import MIN_MACS, WidthChooser
from nbcluster.runtime.kernel_table import register_kernel


@register_kernel("MatMul", *DEVICES)
def _matmul(node, device):
    xp = device.xp
    ta, tb = bool(node.attrs.get("transpose_a")), bool(node.attrs.get("transpose_b"))

    def compute(ctx, a, b):
        return (xp.matmul(a.T if ta else a, b.T if tb else b),)

    if xp is not np:
        return compute
    # On the CPU, OpenBLAS's thread count is chosen per call (runtime/blas_width.py).
    width = WidthChooser()

    def compute_cpu(ctx, a, b):
        a, b = a.T if ta else a, b.T if tb else b
        if a.ndim == 2 and b.ndim == 2:
            macs = a.shape[0] * a.shape[1] * b.shape[1]
            if macs < MIN_MACS:  # one BLAS thread by itself: nothing to choose
                return (np.matmul(a, b),)
            split = (lambda threads: row_split.matmul(a, b, threads)) \
                if row_split.splittable(a, b) else None
            return (width.call(lambda: np.matmul(a, b), macs, split),)
        return (np.matmul(a, b),)

    return compute_cpu


@register_kernel("BatchMatMulV2", *DEVICES)
def _batch_matmul(node, device):
    xp = device.xp
    adj_x, adj_y = bool(node.attrs.get("adj_x")), bool(node.attrs.get("adj_y"))

    def adjoint(m):
        m = xp.swapaxes(m, -1, -2)
        return xp.conj(m) if m.dtype.kind == "c" else m

    def compute(ctx, x, y):
        return (xp.matmul(adjoint(x) if adj_x else x, adjoint(y) if adj_y else y),)

    return compute
