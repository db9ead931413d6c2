"""Gradient rules of DynamicPartition and DynamicStitch, each built of the other, as TF's.

Rule: a DynamicStitch's data get the gradient rows their indices name (where
indices repeat, every copy gets it, as in TF); indices and partitions get none.
"""
from __future__ import annotations

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.indexed_slices import IndexedSlices
from nbcluster.grad.gradient_table import register_gradient
from nbcluster.ops import indexing, math, ranges, reduction, shapes
from nbcluster.ops.dynamic_partition import dynamic_partition, dynamic_stitch
from nbcluster.ops.fill import zeros_like


@register_gradient("DynamicPartition")
def _dynamic_partition_grad(op, *grads):
    data, partitions = op.inputs
    prefix = shapes.shape(partitions)
    positions = shapes.reshape(ranges.range(0, reduction.reduce_prod(prefix)), prefix)
    parts = dynamic_partition(positions, partitions, op.get_attr("num_partitions"))
    # an unused part gets no gradient: zeros of its (run-time) shape
    grads = [zeros_like(out) if g is None else convert_to_tensor(g)
             for out, g in zip(op.outputs, grads)]
    stitched = dynamic_stitch(parts, grads)
    return [shapes.reshape(stitched, shapes.shape(data)), None]


@register_gradient("ParallelDynamicStitch")
@register_gradient("DynamicStitch")
def _dynamic_stitch_grad(op, grad):
    n = op.get_attr("N")
    if isinstance(grad, IndexedSlices):
        grad = convert_to_tensor(grad)
    return [None] * n + [indexing.gather(grad, math.cast(i, dtypes.int32))
                         for i in op.inputs[:n]]
