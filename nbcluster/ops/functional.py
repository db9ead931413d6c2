"""TF2's functional ops, by TensorFlow's names: calls and control flow whose bodies are functions.

Rule: these come from TF2 graphs (tf.function, control flow v2) brought in with
`import_graph_def`; each body is a FuncAttr in the node's attr (the GraphDef's
library read by framework/function_library.py). Output types come from the
node's attrs, shapes from its `output_shapes` (or `_output_shapes`) where TF
wrote them, else unknown. Kernels: kernels/functional.py.
"""
from __future__ import annotations

from nbcluster.framework import dtypes
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.tensor_shape import TensorShape, unknown_shape

# op type -> (attr listing its inputs' types, how many inputs come before them)
_INPUT_TYPES = {"PartitionedCall": ("Tin", 0), "StatefulPartitionedCall": ("Tin", 0),
                "If": ("Tin", 1), "StatelessIf": ("Tin", 1),
                "While": ("T", 0), "StatelessWhile": ("T", 0)}


def is_functional(op_type: str) -> bool:
    return op_type in _INPUT_TYPES


def pinned_inputs(node) -> frozenset:
    """The input slots of a functional node (a Node) that take a DT_RESOURCE or a
    DT_VARIANT, from its type attrs: the placer runs the node with their producers
    (a body reads those resources; lists and optionals never cross the wire)."""
    attr, before = _INPUT_TYPES[node.op]
    types = node.attrs.get(attr) or []
    return frozenset(before + i for i, t in enumerate(types)
                     if dtypes.as_dtype(t) in (dtypes.resource, dtypes.variant))


def outputs_from_attrs(op, types_attr: str) -> list:
    """(dtype, shape) per output: types from attr `types_attr`, shapes from
    `output_shapes` / `_output_shapes` where they fit, else unknown."""
    types = [dtypes.as_dtype(t) for t in op.get_attr(types_attr)]
    shapes = op._attrs.get("output_shapes") or op._attrs.get("_output_shapes") or []
    if len(shapes) != len(types):
        shapes = [unknown_shape()] * len(types)
    return [(t, TensorShape(s)) for t, s in zip(types, shapes)]


@register_op("PartitionedCall")
def _partitioned_call(op) -> list:
    return outputs_from_attrs(op, "Tout")


@register_op("StatefulPartitionedCall", stateful=True)
def _stateful_partitioned_call(op) -> list:
    return outputs_from_attrs(op, "Tout")


@register_op("If", stateful=True)
def _if(op) -> list:
    return outputs_from_attrs(op, "Tout")


@register_op("StatelessIf")
def _stateless_if(op) -> list:
    return outputs_from_attrs(op, "Tout")


@register_op("While", stateful=True)
def _while(op) -> list:
    return outputs_from_attrs(op, "T")


@register_op("StatelessWhile")
def _stateless_while(op) -> list:
    return outputs_from_attrs(op, "T")
