"""Linear-algebra kernels on numpy (CPU) and cupy (GPU): MatMul, BatchMatMulV2.

Rule: as in `kernels/math.py`, a kernel never writes to its inputs (a
transpose is a view, an adjoint a new array) and numpy warnings are silenced.
"""
from __future__ import annotations

from nbcluster.kernels.math import DEVICES, quiet
from nbcluster.kernels.registry import register_kernel


@register_kernel("MatMul", *DEVICES)
def _matmul(node, device):
    xp = device.xp
    ta, tb = bool(node.attrs.get("transpose_a")), bool(node.attrs.get("transpose_b"))

    def compute(ctx, a, b):
        return (xp.matmul(a.T if ta else a, b.T if tb else b),)

    return quiet(xp, compute)


@register_kernel("BatchMatMulV2", *DEVICES)
def _batch_matmul(node, device):
    xp = device.xp
    adj_x, adj_y = bool(node.attrs.get("adj_x")), bool(node.attrs.get("adj_y"))

    def adjoint(m):
        m = xp.swapaxes(m, -1, -2)
        return xp.conj(m) if m.dtype.kind == "c" else m

    def compute(ctx, x, y):
        return (xp.matmul(adjoint(x) if adj_x else x, adjoint(y) if adj_y else y),)

    return quiet(xp, compute)
