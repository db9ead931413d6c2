"""Gradient rules of the resource variable ops: a read passes its gradient to the
handle, a gather a sparse one (an IndexedSlices of the gathered rows).

Rule: as in TF, gradients of a resource variable are taken with respect to
its handle (`tf.gradients` and optimizers differentiate for `v.handle`), so
several reads of one variable add up there. The dense shape of a gather's
gradient is read by VariableShape next to the variable (on its ps).
"""
from __future__ import annotations

from nbcluster.framework import dtypes
from nbcluster.framework.indexed_slices import IndexedSlices
from nbcluster.framework.operation import Tensor
from nbcluster.grad.gradient_table import NotDifferentiable, register_gradient
from nbcluster.ops import array, shapes, slicing
from nbcluster.ops.fill import zeros, zeros_like
from nbcluster.ops.resource_variables import SCATTER_TYPES, handle_op, variable_shape

for _type in ("VarHandleOp", "AssignVariableOp", "AssignAddVariableOp",
              "AssignSubVariableOp", "VarIsInitializedOp", "DestroyResourceOp",
              "VariableShape", "ResourceCountUpTo") + SCATTER_TYPES:
    NotDifferentiable(_type)


def zeros_like_value(t: Tensor) -> Tensor:
    """Zeros like `t`, or, for a variable's handle, like the variable: the
    gradient a handle gets where no read of it had one (control flow's zeros)."""
    var = handle_op(t) if t.dtype == dtypes.resource else None
    if var is None:
        return zeros_like(t, optimize=False)
    with t.graph.colocate_with(t.op, ignore_existing=True):
        return zeros(variable_shape(t), dtype=var.get_attr("dtype"))


@register_gradient("ReadVariableOp")
def _read_grad(op, grad):
    return [grad]


@register_gradient("ResourceGather")
def _gather_grad(op, grad):
    handle, indices = op.inputs
    with op.graph.colocate_with(handle.op, ignore_existing=True):
        p_shape = variable_shape(handle, out_type=indices.dtype)
    ids = shapes.reshape(indices, [-1])
    n = shapes.reshape(shapes.size(indices, out_type=indices.dtype), [1])
    values = shapes.reshape(grad, array.concat([n, slicing.slice(p_shape, [1], [-1])], 0))
    return [IndexedSlices(values, ids, p_shape), None]
