"""TensorArray gradients (TF's rules): each op's gradient goes through the
gradient array of its forward array (TensorArrayGradV3, one per `source`, the
gradient's name scope), the flow carrying the order.
"""
from __future__ import annotations

from nbcluster.grad.gradient_table import NotDifferentiable, register_gradient
from nbcluster.ops.control_flow_tensor_array import TensorArray

for _type in ("TensorArrayV3", "TensorArrayGradV3", "TensorArraySizeV3", "TensorArrayCloseV3",
              "StackV2", "StackPushV2", "StackPopV2", "StackCloseV2"):
    NotDifferentiable(_type)


def _grad_array(op, flow) -> TensorArray:
    # One gradient array per gradient computation: named from the outermost scope
    # ("gradients", "gradients_1"), as TF's _GetGradSource does.
    source = op.graph.get_name_scope().split("/")[0]
    dtype = op.get_attr("dtype") if "dtype" in op._attrs else op.get_attr("T")
    forward = TensorArray(dtype, handle=op.inputs[0], flow=flow)
    return forward.grad(source, flow=flow)


@register_gradient("TensorArrayReadV3")
def _read_grad(op, grad):
    index, flow = op.inputs[1], op.inputs[2]
    written = _grad_array(op, flow).write(index, grad)
    return [None, None, written.flow]


@register_gradient("TensorArrayWriteV3")
def _write_grad(op, flow_grad):
    if flow_grad is None:
        return [None, None, None, None]
    index = op.inputs[1]
    value_grad = _grad_array(op, flow_grad).read(index)
    return [None, None, value_grad, flow_grad]


@register_gradient("TensorArrayGatherV3")
def _gather_grad(op, grad):
    indices, flow = op.inputs[1], op.inputs[2]
    scattered = _grad_array(op, flow).scatter(indices, grad)
    return [None, None, scattered.flow]


@register_gradient("TensorArrayScatterV3")
def _scatter_grad(op, flow_grad):
    if flow_grad is None:
        return [None, None, None, None]
    value_grad = _grad_array(op, flow_grad).gather(op.inputs[1])
    return [None, None, value_grad, flow_grad]


@register_gradient("TensorArrayConcatV3")
def _concat_grad(op, grad, _lengths_grad=None):
    flow, lengths = op.inputs[1], op.outputs[1]
    split = _grad_array(op, flow).split(grad, lengths)
    return [None, split.flow]


@register_gradient("TensorArraySplitV3")
def _split_grad(op, flow_grad):
    if flow_grad is None:
        return [None, None, None, None]
    value_grad = _grad_array(op, flow_grad).concat()
    return [None, value_grad, None, flow_grad]
