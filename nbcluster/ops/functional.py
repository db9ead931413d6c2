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


def _outputs(op, types_attr: str) -> list:
    types = [dtypes.as_dtype(t) for t in op.get_attr(types_attr)]
    shapes = op._attrs.get("output_shapes") or op._attrs.get("_output_shapes") or []
    if len(shapes) != len(types):
        shapes = [unknown_shape()] * len(types)
    return [(t, TensorShape(s)) for t, s in zip(types, shapes)]


@register_op("PartitionedCall")
def _partitioned_call(op) -> list:
    return _outputs(op, "Tout")


@register_op("StatefulPartitionedCall", stateful=True)
def _stateful_partitioned_call(op) -> list:
    return _outputs(op, "Tout")


@register_op("If", stateful=True)
def _if(op) -> list:
    return _outputs(op, "Tout")


@register_op("StatelessIf")
def _stateless_if(op) -> list:
    return _outputs(op, "Tout")


@register_op("While", stateful=True)
def _while(op) -> list:
    return _outputs(op, "T")


@register_op("StatelessWhile")
def _stateless_while(op) -> list:
    return _outputs(op, "T")
