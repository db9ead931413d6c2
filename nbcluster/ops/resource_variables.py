"""Resource variable ops (TF's resource_variable_ops): a VarHandleOp's DT_RESOURCE
handle and the ops that read, write and gather through it.

Rule: every op taking a handle takes it as input 0, registered as a ref input,
so the placer puts it on the handle's device, as TF places resource consumers.
Op types, input order and attrs are TF's, so a GraphDef TF wrote runs here.
Reads (ReadVariableOp, ResourceGather, VariableShape, VarIsInitializedOp) are
not stateful, so a tf.function orders them as reads; writes are stateful.
The variable's dtype and shape come from the handle's VarHandleOp (through
Identity, Switch and Enter ops); a handle from elsewhere has an unknown shape.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape, scalar, unknown_shape
from nbcluster.ops.math import check_dtype
from nbcluster.ops.shape_inference import shape_error

SCATTER_TYPES = ("ResourceScatterUpdate", "ResourceScatterAdd", "ResourceScatterSub",
                 "ResourceScatterMul", "ResourceScatterDiv", "ResourceScatterMin",
                 "ResourceScatterMax")


# Ops that hand their input 0 on as is (a handle a cond or a loop captured).
_PASS_ON = frozenset({"Identity", "Switch", "RefSwitch", "Enter", "RefEnter"})


def handle_op(handle: Tensor):
    """The VarHandleOp a handle comes from (through Identity ops, and the
    Switch / Enter a cond or loop captures it by), else None."""
    op = handle.op
    while op.type in _PASS_ON and op.inputs:
        op = op.inputs[0].op
    return op if op.type == "VarHandleOp" else None


def handle_shape(handle: Tensor) -> TensorShape:
    """The shape of the variable behind `handle` (unknown if it is not traceable)."""
    op = handle_op(handle)
    return TensorShape(op.get_attr("shape")) if op is not None else unknown_shape()


def _check_handle(op, index: int = 0) -> Tensor:
    handle = op.inputs[index]
    if handle.dtype != dtypes.resource:
        raise TypeError(f"Input 'resource' of '{op.type}' Op has type {handle.dtype.name} "
                        f"that does not match expected type of resource ('{op.name}')")
    return handle


def _check_dtype(op, dtype, attr: str = "dtype") -> None:
    handle = handle_op(op.inputs[0])
    if handle is not None and handle.get_attr("dtype") != dtype:
        raise TypeError(f"'{op.name}' ({op.type}) uses the {handle.get_attr('dtype').name} "
                        f"variable '{handle.name}' as {attr} {dtype.name}")


@register_op("VarHandleOp", stateful=True)
def _var_handle_shape(op):
    return [(dtypes.resource, scalar())]


@register_op("ReadVariableOp", ref_inputs=(0,))
def _read_shape(op):
    _check_handle(op)
    _check_dtype(op, op.get_attr("dtype"))
    return [(op.get_attr("dtype"), handle_shape(op.inputs[0]))]


def _write_shape(op):
    _check_handle(op)
    value = op.inputs[1]
    if value.dtype != op.get_attr("dtype"):
        raise TypeError(f"Input 'value' of '{op.type}' Op has type {value.dtype.name} that "
                        f"does not match type {op.get_attr('dtype').name} of attr 'dtype'")
    _check_dtype(op, value.dtype)
    if not handle_shape(op.inputs[0]).is_compatible_with(value.shape):
        raise shape_error(op, f"Shapes {handle_shape(op.inputs[0])} and {value.shape} are "
                              f"incompatible")
    return []


for _type in ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"):
    register_op(_type, stateful=True, ref_inputs=(0,))(_write_shape)


@register_op("VarIsInitializedOp", ref_inputs=(0,))
def _is_initialized_shape(op):
    _check_handle(op)
    return [(dtypes.bool, scalar())]


@register_op("DestroyResourceOp", stateful=True, ref_inputs=(0,))
def _destroy_shape(op):
    _check_handle(op)
    return []


@register_op("VariableShape", ref_inputs=(0,))
def _variable_shape_shape(op):
    _check_handle(op)
    check_dtype(op.get_attr("out_type"), (dtypes.int32, dtypes.int64), "out_type")
    return [(op.get_attr("out_type"), TensorShape([handle_shape(op.inputs[0]).rank]))]


@register_op("ResourceGather", ref_inputs=(0,))
def _gather_shape(op):
    _check_handle(op)
    _check_dtype(op, op.get_attr("dtype"))
    indices = op.inputs[1]
    check_dtype(indices.dtype, (dtypes.int32, dtypes.int64), "indices")
    var = handle_shape(op.inputs[0])
    if var.rank == 0:
        raise shape_error(op, "Shape must be at least rank 1 but is rank 0")
    if var.rank is None or indices.shape.rank is None:
        return [(op.get_attr("dtype"), unknown_shape())]
    return [(op.get_attr("dtype"), TensorShape(indices.shape.dims + var.dims[1:]))]


@register_op("ResourceCountUpTo", stateful=True, ref_inputs=(0,))
def _count_up_to_shape(op):
    _check_handle(op)
    check_dtype(op.get_attr("T"), (dtypes.int32, dtypes.int64), "T")
    _check_dtype(op, op.get_attr("T"), "T")
    if handle_shape(op.inputs[0]).rank not in (None, 0):
        raise shape_error(op, "Shape must be rank 0")
    return [(op.get_attr("T"), scalar())]


def _scatter_shape(op):
    _check_handle(op)
    _, indices, updates = op.inputs
    check_dtype(indices.dtype, (dtypes.int32, dtypes.int64), "indices")
    if updates.dtype != op.get_attr("dtype"):
        raise TypeError(f"Input 'updates' of '{op.type}' Op has type {updates.dtype.name} "
                        f"that does not match type {op.get_attr('dtype').name} of attr "
                        f"'dtype'")
    _check_dtype(op, updates.dtype)
    var = handle_shape(op.inputs[0])
    if var.rank == 0:
        raise shape_error(op, "Shape must be at least rank 1 but is rank 0")
    if updates.shape.rank not in (None, 0) and indices.shape.rank is not None and \
            var.rank is not None:
        expected = TensorShape(indices.shape.dims + var.dims[1:])
        if not updates.shape.is_compatible_with(expected):
            raise shape_error(op, f"Shapes {updates.shape} and {expected} are incompatible: "
                                  f"updates must be indices.shape + var.shape[1:] or a "
                                  f"scalar")
    return []


for _type in SCATTER_TYPES:
    register_op(_type, stateful=True, ref_inputs=(0,))(_scatter_shape)


# -- functional builders (TF's gen_resource_variable_ops) ---------------------------------
def _create(handle: Tensor, op_type: str, inputs: list, attrs: dict, name: Optional[str]):
    graph = handle.graph
    with graph.colocate_with(handle.op):
        return graph.create_op(op_type, [handle] + inputs, attrs, name=name or op_type)


def var_handle_op(dtype, shape, shared_name: str, container: str = "",
                  name: Optional[str] = None, graph=None) -> Tensor:
    """A handle to the variable `shared_name` of the task it runs on (op VarHandleOp)."""
    from nbcluster.framework.graph import get_default_graph
    graph = graph or get_default_graph()
    return graph.create_op("VarHandleOp", [], {
        "dtype": dtypes.as_dtype(dtype), "shape": TensorShape(shape), "container": container,
        "shared_name": shared_name, "allowed_devices": []}, name=name or "VarHandleOp"
    ).outputs[0]


def read_variable_op(handle: Tensor, dtype, name: Optional[str] = None) -> Tensor:
    return _create(handle, "ReadVariableOp", [], {"dtype": dtypes.as_dtype(dtype)},
                   name).outputs[0]


def assign_variable_op(handle: Tensor, value: Tensor, name: Optional[str] = None,
                       op_type: str = "AssignVariableOp"):
    attrs = {"dtype": value.dtype}
    if op_type == "AssignVariableOp":
        attrs["validate_shape"] = False
    return _create(handle, op_type, [value], attrs, name)


def var_is_initialized_op(handle: Tensor, name: Optional[str] = None) -> Tensor:
    return _create(handle, "VarIsInitializedOp", [], {}, name).outputs[0]


def variable_shape(handle: Tensor, out_type=dtypes.int32, name: Optional[str] = None) -> Tensor:
    return _create(handle, "VariableShape", [], {"out_type": dtypes.as_dtype(out_type)},
                   name).outputs[0]


def resource_gather(handle: Tensor, indices: Tensor, dtype, name: Optional[str] = None
                    ) -> Tensor:
    attrs = {"dtype": dtypes.as_dtype(dtype), "Tindices": indices.dtype, "batch_dims": 0,
             "validate_indices": True}
    return _create(handle, "ResourceGather", [indices], attrs, name).outputs[0]


def resource_scatter(op_type: str, handle: Tensor, indices: Tensor, updates: Tensor,
                     name: Optional[str] = None):
    attrs = {"dtype": updates.dtype, "Tindices": indices.dtype}
    return _create(handle, op_type, [indices, updates], attrs, name)


def destroy_resource_op(handle: Tensor, ignore_lookup_error: bool = True,
                        name: Optional[str] = None):
    return _create(handle, "DestroyResourceOp", [],
                   {"ignore_lookup_error": bool(ignore_lookup_error)}, name)
