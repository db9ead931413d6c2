"""Control ops: NoOp, StopGradient, and the grouping helpers built from control
dependencies."""
from __future__ import annotations

import builtins
from typing import Optional

from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph, graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Operation, Tensor
from nbcluster.ops.array import identity


@register_op("NoOp")
def _no_op_shape(op):
    return []


def no_op(name: Optional[str] = None, graph=None) -> Operation:
    """An op that does nothing; useful as a target with control inputs."""
    graph = graph or get_default_graph()
    return graph.create_op("NoOp", [], {}, name=name or "NoOp")


@register_op("StopGradient")
def _stop_gradient_shape(op):
    return [(op.inputs[0].dtype, op.inputs[0].shape)]


def stop_gradient(input, name: Optional[str] = None) -> Tensor:  # noqa: A002 - TF's name
    """`input` unchanged, but a wall for gradients: tf.gradients sees a constant here.

    Example:
      >>> stop_gradient(constant([1.0])).op.type
      'StopGradient'
    """
    graph = graph_of(input)
    with graph.name_scope(name or "StopGradient") as scope:
        value = convert_to_tensor(input, name="input", graph=graph)
        return graph.create_op("StopGradient", [value], {"T": value.dtype},
                               name=scope).outputs[0]


def group(*inputs, **kwargs) -> Operation:
    """A NoOp that runs only after every one of `inputs` has run.

    Args:
      *inputs: Tensors, Operations or Variables, or (nested) lists of them.
      name: keyword only; the NoOp's name (default "group_deps").
    Returns: the NoOp. Inputs on several devices get one NoOp per device,
      and the returned NoOp depends on those (TF's two-level tree).

    Example:
      >>> a, b = constant(1.0), constant(2.0)
      >>> [c.name for c in group(a, b).control_inputs]
      ['Const', 'Const_1']
    """
    name = kwargs.pop("name", None)
    if kwargs:
        raise ValueError("Unknown keyword arguments: " + ", ".join(kwargs))
    flat = _flatten(inputs)
    graph = graph_of(flat)
    with graph.name_scope(name or "group_deps") as scope:
        if not flat:
            return no_op(name=scope, graph=graph)
        by_device: dict = {}
        for value in flat:
            if not hasattr(value, "device"):
                raise TypeError(f"Expected tf.group() expected Tensor arguments not "
                                f"'{value}' with type '{type(value)}'")
            by_device.setdefault(value.device or "", []).append(value)
        if len(by_device) == 1:
            ((device, deps),) = by_device.items()
            return _no_op_after(graph, device, deps, scope)
        firsts = [_no_op_after(graph, device, by_device[device], None)
                  for device in sorted(by_device)]
        with graph.control_dependencies(firsts):
            return no_op(name=scope, graph=graph)


def _flatten(values) -> list:
    out: list = []
    for v in values:
        if isinstance(v, (list, builtins.tuple)):  # this module defines tf.tuple
            out.extend(_flatten(v))
        elif isinstance(v, dict):
            out.extend(_flatten([v[k] for k in sorted(v)]))
        else:
            out.append(v)
    return out


def _no_op_after(graph, device: str, deps: list, name: Optional[str]) -> Operation:
    with graph.control_dependencies(deps):
        if not device:
            return no_op(name=name, graph=graph)
        with graph.device(device):
            return no_op(name=name, graph=graph)


def with_dependencies(dependencies, output_tensor, name: Optional[str] = None) -> Tensor:
    """`output_tensor` through an Identity that runs only after `dependencies`."""
    graph = graph_of(output_tensor, dependencies)
    with graph.name_scope(name or "control_dependency") as scope:
        value = convert_to_tensor(output_tensor, graph=graph)
        with graph.colocate_with(value.op), graph.control_dependencies(dependencies):
            return identity(value, name=scope)


def tuple(tensors, name: Optional[str] = None, control_inputs=None) -> list:  # noqa: A001
    """`tensors` gated together: each comes out only once all of them are computed.

    Returns: a list with an Identity per Tensor, a grouped NoOp per Operation,
      and None for None.
    Raises: ValueError when there is nothing to gate on.
    """
    graph = graph_of(tensors)
    with graph.name_scope(name or "tuple"):
        values = [t if t is None or isinstance(t, (Tensor, Operation))
                  else convert_to_tensor(t, graph=graph) for t in tensors]
        gating = {id(g): g for g in (v if isinstance(v, Operation) else v.op
                                     for v in values if v is not None)}
        for c in control_inputs or []:
            c = c.op if isinstance(c, Tensor) else c
            gating[id(c)] = c
        if not gating:
            raise ValueError(f"Must have at least one Tensor: {tensors}")
        gate = group(*sorted(gating.values(), key=lambda op: op._id))
        out: list = []
        for v in values:
            if isinstance(v, Tensor):
                out.append(with_dependencies([gate], v))
            elif isinstance(v, Operation):
                with graph.control_dependencies([gate]):
                    out.append(group(v))
            else:
                out.append(None)
        return out
