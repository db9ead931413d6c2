"""Control kernels: NoOp computes nothing; StopGradient passes its input through."""
from __future__ import annotations

from nbcluster.runtime.kernel_table import register_kernel


@register_kernel("NoOp", "CPU", "GPU")
def _no_op(node, device):
    return lambda ctx: ()


@register_kernel("StopGradient", "CPU", "GPU")
def _stop_gradient(node, device):
    return lambda ctx, x: (x,)
