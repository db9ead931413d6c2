"""Gradient rules of the fill family: a Fill's scalar value gets the sum of the
incoming gradient; ZerosLike and OnesLike depend only on a shape, so are
NotDifferentiable.
"""
from __future__ import annotations

from nbcluster.grad.gradient_table import NotDifferentiable, register_gradient
from nbcluster.ops.reduction import reduce_sum

for _type in ("ZerosLike", "OnesLike"):
    NotDifferentiable(_type)


@register_gradient("Fill")
def _fill_grad(op, grad):
    return [None, reduce_sum(grad)]
