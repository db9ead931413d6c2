"""Gradient rules of the indexing family: GatherV2, UnsortedSegmentSum and TF1's
Select (OneHot, Where, Unique and ListDiff are NotDifferentiable, as in TF).

Rule: a gather along axis 0 gets a sparse gradient, as in TF: an IndexedSlices
of the incoming gradient's rows at the gathered indices (repeated indices add
up when it is applied or made dense), so an embedding's update ships and
touches only those rows. Along another axis it is dense: the incoming gradient
summed into the gathered slices with UnsortedSegmentSum, the gather's adjoint.
"""
from __future__ import annotations

from nbcluster.framework.indexed_slices import IndexedSlices
from nbcluster.framework.operation import Tensor
from nbcluster.grad.gradient_table import NotDifferentiable, register_gradient
from nbcluster.ops import array, indexing, shapes, slicing
from nbcluster.ops import math as m
from nbcluster.ops.fill import fill, zeros_like
from nbcluster.ops.shape_inference import constant_value

for _type in ("OneHot", "Where", "Unique", "ListDiff"):
    NotDifferentiable(_type)


def _gather_axis(op) -> int:
    """The gather's axis as a non-negative int; the rule needs it when built."""
    params, _, axis_t = op.inputs
    value = constant_value(axis_t)
    if value is None:
        raise NotImplementedError(f"The gradient of GatherV2 '{op.name}' needs a constant "
                                  f"axis")
    a = int(value.reshape(-1)[0])
    if a < 0:
        if params.shape.rank is None:
            raise NotImplementedError(f"The gradient of GatherV2 '{op.name}' needs "
                                      f"params of known rank for a negative axis ({a})")
        a += params.shape.rank
    return a


@register_gradient("GatherV2")
def _gather_grad(op, grad):
    params, indices, _ = op.inputs
    a = _gather_axis(op)
    # Next to params, as TF puts it: reading a ps table's shape stays on the ps.
    with op.graph.colocate_with(params.op, ignore_existing=True):
        p_shape = shapes.shape(params, out_type=indices.dtype)
    ids = shapes.reshape(indices, [-1])
    n = shapes.reshape(shapes.size(indices, out_type=indices.dtype), [1])
    if a == 0:  # [indices..., inner...] -> [n, inner...] rows of a [rows, inner...] tensor
        values = shapes.reshape(grad, array.concat([n, slicing.slice(p_shape, [1], [-1])],
                                                   0))
        return [IndexedSlices(values, ids, p_shape), None, None]
    # [outer..., indices..., inner...] as [outer..., n, inner] with the n axis first.
    rows = slicing.slice(p_shape, [a], [1])
    outer = slicing.slice(p_shape, [0], [a])
    values = shapes.reshape(grad, array.concat([outer, n, [-1]], 0))
    front = [a] + list(range(a)) + [a + 1]
    summed = indexing.unsorted_segment_sum(shapes.transpose(values, front), ids, rows[0])
    back = list(range(1, a + 1)) + [0, a + 1]
    return [shapes.reshape(shapes.transpose(summed, back), p_shape), None, None]


def _kept(mask: Tensor, like: Tensor) -> Tensor:
    """`mask` (of segment_ids' shape) with trailing size-1 dims up to like's rank."""
    extra = m.subtract(shapes.rank(like), shapes.rank(mask))
    ones = fill(shapes.reshape(extra, [1]), 1)
    return shapes.reshape(mask, array.concat([shapes.shape(mask), ones], 0))


@register_gradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op, grad):
    _, ids, _ = op.inputs
    # Negative ids dropped their slices, so those slices get no gradient.
    safe = m.maximum(ids, zeros_like(ids))
    picked = indexing.gather(grad, safe)
    keep = _kept(m.greater_equal(ids, 0), picked)
    return [m.where_v2(keep, picked, zeros_like(picked)), None, None]


@register_gradient("Select")
def _select_grad(op, grad):
    cond = op.inputs[0]
    zeros = zeros_like(grad)
    return [None, indexing.where(cond, grad, zeros), indexing.where(cond, zeros, grad)]
