"""Control-flow primitives by TF's op types: Switch, Merge, Enter, Exit,
NextIteration, LoopCond (and their Ref* forms).

Rule: these ops only route values; what makes them control flow is the
executor (`runtime/control_flow_executor.py`): a Switch's untaken output is a
dead tensor, dead propagates through every op that is not a Merge, a Merge
forwards its first live input, Enter/Exit move values into and out of a
frame, NextIteration into the frame's next iteration. `tf.cond`, `tf.case`
and `tf.while_loop` are built from them (`control_flow_cond.py`,
`control_flow_while.py`).
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.op_registry import get_op_def, register_op
from nbcluster.framework.operation import Operation, Tensor
from nbcluster.framework.tensor_shape import TensorShape, scalar, unknown_shape


def _same(op):
    return [(op.inputs[0].dtype, op.inputs[0].shape)]


def _switch_shape(op):
    data = op.inputs[0]
    return [(data.dtype, data.shape), (data.dtype, data.shape)]


def _merge_shape(op):
    shapes = [t.shape for t in op.inputs]
    out = shapes[0]
    for s in shapes[1:]:
        if out.rank is None or s.rank is None or out.rank != s.rank:
            out = unknown_shape()
            break
        out = TensorShape([a if a == b else None for a, b in zip(out.as_list(), s.as_list())])
    return [(op.inputs[0].dtype, out), (dtypes.int32, scalar())]


for _prefix, _refs in (("", {}), ("Ref", {"ref_inputs": (0,)})):
    register_op(_prefix + "Switch", ref_outputs=(0, 1) if _refs else (), **_refs)(_switch_shape)
    register_op(_prefix + "Enter", ref_outputs=(0,) if _refs else (), **_refs)(_same)
    register_op(_prefix + "Exit", ref_outputs=(0,) if _refs else (), **_refs)(_same)
    register_op(_prefix + "NextIteration", ref_outputs=(0,) if _refs else (), **_refs)(_same)
register_op("Merge")(_merge_shape)
register_op("RefMerge", ref_inputs=range(64), ref_outputs=(0,))(_merge_shape)


@register_op("LoopCond")
def _loop_cond_shape(op):
    return [(dtypes.bool, scalar())]


@register_op("ControlTrigger")
def _control_trigger_shape(op):
    return []


def is_ref(t: Tensor) -> bool:
    """Whether `t` is a reference output (a VariableV2's value)."""
    return t.value_index in get_op_def(t.op.type).ref_outputs


def switch(data, pred, name: Optional[str] = None) -> tuple:
    """(output_false, output_true): `data` on the side `pred` picks; the other is dead."""
    graph = graph_of(data, pred)
    data = convert_to_tensor(data, graph=graph)
    pred = convert_to_tensor(pred, dtype=dtypes.bool, graph=graph)
    op_type = "RefSwitch" if is_ref(data) else "Switch"
    with graph.colocate_with(data.op, ignore_existing=True):  # TF's: with its data only
        op = graph.create_op(op_type, [data, pred], {"T": data.dtype}, name=name or "Switch")
    return op.outputs[0], op.outputs[1]


def merge(inputs, name: Optional[str] = None) -> tuple:
    """(output, value_index): the first live one of `inputs`, and which it was."""
    graph = graph_of(inputs)
    inputs = [convert_to_tensor(t, graph=graph) for t in inputs]
    dtype = inputs[0].dtype
    for t in inputs[1:]:
        if t.dtype != dtype:
            raise TypeError(f"Merge inputs must all have dtype {dtype.name}, "
                            f"got {t.dtype.name} for {t.name}")
    op_type = "RefMerge" if all(is_ref(t) for t in inputs) else "Merge"
    op = graph.create_op(op_type, inputs, {"T": dtype, "N": len(inputs)},
                         name=name or "Merge")
    return op.outputs[0], op.outputs[1]


def enter(data, frame_name: str, is_constant: bool = False, parallel_iterations: int = 10,
          name: Optional[str] = None) -> Tensor:
    """`data`, moved into the child frame `frame_name` (every iteration's if constant)."""
    graph = graph_of(data)
    data = convert_to_tensor(data, graph=graph)
    op_type = "RefEnter" if is_ref(data) else "Enter"
    with graph.colocate_with(data.op):
        op = graph.create_op(op_type, [data], {
            "T": data.dtype, "frame_name": frame_name, "is_constant": bool(is_constant),
            "parallel_iterations": int(parallel_iterations)}, name=name or "Enter")
    return op.outputs[0]


def exit(data, name: Optional[str] = None) -> Tensor:  # noqa: A001 - TF's name
    """`data`, moved out of its frame into the parent frame."""
    graph = graph_of(data)
    data = convert_to_tensor(data, graph=graph)
    op_type = "RefExit" if is_ref(data) else "Exit"
    return graph.create_op(op_type, [data], {"T": data.dtype}, name=name or "Exit").outputs[0]


def next_iteration(data, name: Optional[str] = None) -> Tensor:
    """`data`, handed to the next iteration of its frame."""
    graph = graph_of(data)
    data = convert_to_tensor(data, graph=graph)
    op_type = "RefNextIteration" if is_ref(data) else "NextIteration"
    return graph.create_op(op_type, [data], {"T": data.dtype},
                           name=name or "NextIteration").outputs[0]


def loop_cond(pred, name: Optional[str] = None) -> Tensor:
    """The boolean that ends a frame's iterations: the loop's termination condition."""
    graph = graph_of(pred)
    pred = convert_to_tensor(pred, dtype=dtypes.bool, graph=graph)
    return graph.create_op("LoopCond", [pred], {}, name=name or "LoopCond").outputs[0]


def replace_input(op: Operation, index: int, tensor: Tensor) -> None:
    """Rewires data input `index` of `op` to `tensor` (TF's _update_input): how a
    loop's Merge gets its back edge from the NextIteration built after it, and
    how a branch's or body's ops read values through their Switch or Enter."""
    op._update_input(index, tensor)


def add_control_input(op: Operation, control: Operation) -> None:
    if control not in op._control_inputs and control is not op:
        op._control_inputs.append(control)


@register_op("Assert", stateful=True)
def _assert_shape(op):
    return []


def Assert(condition, data, summarize: Optional[int] = None,  # noqa: N802 - TF's name
           name: Optional[str] = None) -> Operation:
    """An op that fails the step with InvalidArgumentError when `condition` is false,
    printing `data` (a list of tensors)."""
    graph = graph_of(condition, data)
    with graph.name_scope(name or "Assert") as scope:
        condition = convert_to_tensor(condition, dtype=dtypes.bool, graph=graph)
        data = [convert_to_tensor(d, graph=graph) for d in data]
        return graph.create_op("Assert", [condition] + data,
                               {"T": [d.dtype for d in data], "summarize": summarize or 3},
                               name=scope)
