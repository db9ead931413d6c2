"""Control kernels: NoOp computes nothing and has no outputs."""
from __future__ import annotations

from nbcluster.kernels.registry import register_kernel


@register_kernel("NoOp", "CPU", "GPU")
def _no_op(node, device):
    return lambda ctx: ()
