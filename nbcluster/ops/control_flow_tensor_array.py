"""tf.TensorArray (TF1's, by its V3 op types) and the StackV2 ops loop gradients use.

Rule: a TensorArray is a per-step resource on the device of its handle; every
op on it takes the `flow` scalar and (for writes) returns a new one, so data
dependencies order the writes and reads, in loops too (the flow is a loop
variable). Ops on one array are colocated with its handle.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph, graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape, as_shape, scalar, unknown_shape

_FLOW = (dtypes.float32, scalar())


@register_op("TensorArrayV3", stateful=True)
def _ta_shape(op):
    return [(dtypes.resource, TensorShape([2])), _FLOW]


@register_op("TensorArrayGradV3", stateful=True)
def _ta_grad_shape(op):
    return [(dtypes.resource, TensorShape([2])), _FLOW]


@register_op("TensorArrayWriteV3", stateful=True)
@register_op("TensorArrayScatterV3", stateful=True)
@register_op("TensorArraySplitV3", stateful=True)
def _ta_flow_shape(op):
    return [_FLOW]


@register_op("TensorArrayReadV3", stateful=True)
def _ta_read_shape(op):
    return [(op.get_attr("dtype"), as_shape(op._attrs.get("_element_shape")))]


@register_op("TensorArrayGatherV3", stateful=True)
def _ta_gather_shape(op):
    element = as_shape(op._attrs.get("element_shape"))
    first = op.inputs[1].shape[0] if op.inputs[1].shape.rank == 1 else None
    dims = [first] + element.as_list() if element.rank is not None else None
    return [(op.get_attr("dtype"), TensorShape(dims) if dims is not None else unknown_shape())]


@register_op("TensorArrayConcatV3", stateful=True)
def _ta_concat_shape(op):
    rest = as_shape(op._attrs.get("element_shape_except0"))
    dims = [None] + rest.as_list() if rest.rank is not None else None
    return [(op.get_attr("dtype"), TensorShape(dims) if dims is not None else unknown_shape()),
            (dtypes.int64, TensorShape([None]))]


@register_op("TensorArraySizeV3", stateful=True)
def _ta_size_shape(op):
    return [(dtypes.int32, scalar())]


@register_op("TensorArrayCloseV3", stateful=True)
def _ta_close_shape(op):
    return []


class TensorArray:
    """A list of tensors of one dtype that graph ops write and read (TF1's API).

    Every write returns a new TensorArray sharing the handle with a new flow.
    """

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape: bool = True,
                 element_shape=None, colocate_with_first_write_call: bool = True,
                 name: Optional[str] = None) -> None:
        self._dtype = dtypes.as_dtype(dtype)
        self._element_shape = as_shape(element_shape) if element_shape is not None \
            else unknown_shape()
        self._infer_shape = infer_shape
        if handle is not None:
            if flow is None:
                raise ValueError("flow must not be None if handle is not None.")
            self._handle, self._flow = handle, flow
            return
        if size is None:
            raise ValueError("Size must be provided if handle is not provided")
        graph = get_default_graph()
        with graph.name_scope(name or "TensorArray") as scope:
            size = convert_to_tensor(size, dtype=dtypes.int32, name="size", graph=graph)
            op = graph.create_op("TensorArrayV3", [size], {
                "dtype": self._dtype, "element_shape": self._element_shape,
                "dynamic_size": bool(dynamic_size), "clear_after_read":
                    True if clear_after_read is None else bool(clear_after_read),
                "identical_element_shapes": bool(infer_shape),
                "tensor_array_name": tensor_array_name or ""}, name=scope)
        self._handle, self._flow = op.outputs

    dtype = property(lambda self: self._dtype)
    handle = property(lambda self: self._handle)
    flow = property(lambda self: self._flow)
    element_shape = property(lambda self: self._element_shape)

    def _with_flow(self, flow: Tensor) -> "TensorArray":
        ta = TensorArray(self._dtype, handle=self._handle, flow=flow,
                         infer_shape=self._infer_shape, element_shape=self._element_shape)
        return ta

    def _op(self, op_type: str, inputs: list, attrs: dict, name: str):
        graph = graph_of(self._handle)
        with graph.colocate_with(self._handle.op), graph.name_scope(name) as scope:
            return graph.create_op(op_type, inputs, attrs, name=scope)

    def _merge_element_shape(self, shape) -> None:
        if self._infer_shape:
            self._element_shape = self._element_shape.merge_with(shape) \
                if self._element_shape.rank is not None else shape

    def identity(self) -> "TensorArray":
        from nbcluster.ops.array import identity
        return self._with_flow(identity(self._flow))

    def read(self, index, name: Optional[str] = None) -> Tensor:
        index = convert_to_tensor(index, dtype=dtypes.int32, graph=graph_of(self._handle))
        op = self._op("TensorArrayReadV3", [self._handle, index, self._flow],
                      {"dtype": self._dtype, "_element_shape": self._element_shape},
                      name or "TensorArrayReadV3")
        return op.outputs[0]

    def write(self, index, value, name: Optional[str] = None) -> "TensorArray":
        graph = graph_of(self._handle)
        index = convert_to_tensor(index, dtype=dtypes.int32, graph=graph)
        value = convert_to_tensor(value, graph=graph)
        if value.dtype != self._dtype:
            raise TypeError(f"TensorArray dtype is {self._dtype.name} but op has dtype "
                            f"{value.dtype.name} ({value.name}).")
        if self._infer_shape and self._element_shape.rank is not None and \
                not self._element_shape.is_compatible_with(value.shape):
            raise ValueError(f"Inconsistent shapes: saw {value.shape} but expected "
                             f"{self._element_shape} (and infer_shape=True) for {value.name}")
        op = self._op("TensorArrayWriteV3", [self._handle, index, value, self._flow],
                      {"T": self._dtype}, name or "TensorArrayWrite")
        ta = self._with_flow(op.outputs[0])
        ta._merge_element_shape(value.shape)
        return ta

    def gather(self, indices, name: Optional[str] = None) -> Tensor:
        indices = convert_to_tensor(indices, dtype=dtypes.int32, graph=graph_of(self._handle))
        return self._op("TensorArrayGatherV3", [self._handle, indices, self._flow],
                        {"dtype": self._dtype, "element_shape": self._element_shape},
                        name or "TensorArrayGatherV3").outputs[0]

    def stack(self, name: Optional[str] = None) -> Tensor:
        from nbcluster.ops.reduction import range as range_
        graph = graph_of(self._handle)
        with graph.name_scope(name or "TensorArrayStack"):
            return self.gather(range_(0, self.size()), name="TensorArrayGatherV3")

    def scatter(self, indices, value, name: Optional[str] = None) -> "TensorArray":
        graph = graph_of(self._handle)
        indices = convert_to_tensor(indices, dtype=dtypes.int32, graph=graph)
        value = convert_to_tensor(value, dtype=self._dtype, graph=graph)
        op = self._op("TensorArrayScatterV3", [self._handle, indices, value, self._flow],
                      {"T": self._dtype}, name or "TensorArrayScatter")
        ta = self._with_flow(op.outputs[0])
        if value.shape.rank is not None and value.shape.rank >= 1:
            ta._merge_element_shape(TensorShape(value.shape.as_list()[1:]))
        return ta

    def unstack(self, value, name: Optional[str] = None) -> "TensorArray":
        from nbcluster.ops.reduction import range as range_
        from nbcluster.ops.shapes import shape
        graph = graph_of(self._handle)
        value = convert_to_tensor(value, dtype=self._dtype, graph=graph)
        with graph.name_scope(name or "TensorArrayUnstack"):
            return self.scatter(range_(0, shape(value)[0]), value,
                                name="TensorArrayScatter")

    def split(self, value, lengths, name: Optional[str] = None) -> "TensorArray":
        graph = graph_of(self._handle)
        value = convert_to_tensor(value, dtype=self._dtype, graph=graph)
        lengths = convert_to_tensor(lengths, dtype=dtypes.int64, graph=graph)
        op = self._op("TensorArraySplitV3", [self._handle, value, lengths, self._flow],
                      {"T": self._dtype}, name or "TensorArraySplit")
        return self._with_flow(op.outputs[0])

    def concat(self, name: Optional[str] = None) -> Tensor:
        rest = TensorShape(self._element_shape.as_list()[1:]) \
            if self._element_shape.rank else unknown_shape()
        return self._op("TensorArrayConcatV3", [self._handle, self._flow],
                        {"dtype": self._dtype, "element_shape_except0": rest},
                        name or "TensorArrayConcatV3").outputs[0]

    def size(self, name: Optional[str] = None) -> Tensor:
        return self._op("TensorArraySizeV3", [self._handle, self._flow], {},
                        name or "TensorArraySizeV3").outputs[0]

    def close(self, name: Optional[str] = None):
        return self._op("TensorArrayCloseV3", [self._handle], {}, name or "TensorArrayClose")

    def grad(self, source: str, flow=None, name: Optional[str] = None) -> "TensorArray":
        flow = self._flow if flow is None else flow
        op = self._op("TensorArrayGradV3", [self._handle, flow], {"source": source},
                      name or "TensorArrayGrad")
        return TensorArray(self._dtype, handle=op.outputs[0], flow=op.outputs[1],
                           infer_shape=self._infer_shape, element_shape=self._element_shape)


# -- stacks (StackV2): what a gradient loop pops a forward loop's values from --------
@register_op("StackV2", stateful=True)
def _stack_shape(op):
    return [(dtypes.resource, scalar())]


@register_op("StackPushV2", stateful=True)
def _stack_push_shape(op):
    return [(op.inputs[1].dtype, op.inputs[1].shape)]


@register_op("StackPopV2", stateful=True)
def _stack_pop_shape(op):
    return [(op.get_attr("elem_type"), as_shape(op._attrs.get("_shape")))]


@register_op("StackCloseV2", stateful=True)
def _stack_close_shape(op):
    return []


def stack_v2(max_size, elem_type, stack_name: str = "", name: Optional[str] = None) -> Tensor:
    graph = get_default_graph()
    max_size = convert_to_tensor(max_size, dtype=dtypes.int32, graph=graph)
    return graph.create_op("StackV2", [max_size], {"elem_type": dtypes.as_dtype(elem_type),
                                                   "stack_name": stack_name},
                           name=name or "StackV2").outputs[0]


def stack_push_v2(handle, elem, swap_memory: bool = False, name: Optional[str] = None):
    graph = graph_of(handle)
    elem = convert_to_tensor(elem, graph=graph)
    with graph.colocate_with(handle.op):
        return graph.create_op("StackPushV2", [handle, elem], {
            "T": elem.dtype, "swap_memory": swap_memory}, name=name or "StackPushV2").outputs[0]


def stack_pop_v2(handle, elem_type, shape=None, name: Optional[str] = None) -> Tensor:
    graph = graph_of(handle)
    with graph.colocate_with(handle.op):
        return graph.create_op("StackPopV2", [handle], {
            "elem_type": dtypes.as_dtype(elem_type),
            "_shape": shape if shape is not None else unknown_shape()},
            name=name or "StackPopV2").outputs[0]
