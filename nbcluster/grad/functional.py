"""TF2's functional ops, lists and optionals: their gradients come with the imported graph.

These ops arrive only in graphs real TensorFlow wrote (ops/functional.py), and
TF writes their gradients into the graph too (`tf.gradients` before export:
the `*_grad` functions of a While, the lists that carry its intermediates).
nbcluster does not differentiate a function body, so `tf.gradients` over one
of these ops says so, naming it, instead of returning a silent None.
"""
from nbcluster import errors
from nbcluster.grad.gradient_table import NotDifferentiable, register_gradient

_NO_RULE = ("PartitionedCall", "StatefulPartitionedCall", "If", "StatelessIf", "While",
            "StatelessWhile", "TensorListFromTensor", "TensorListPushBack",
            "TensorListPopBack", "TensorListSetItem", "TensorListGetItem", "TensorListStack",
            "OptionalFromValue", "OptionalGetValue")


def _unsupported(op, *grads):
    raise errors.UnimplementedError(
        None, None, f"nbcluster has no gradient for {op.type} ({op.name}), an op of a graph "
                    f"TensorFlow wrote: compute the gradients in TensorFlow before exporting "
                    f"(tf.gradients writes them into the GraphDef)")


for _op_type in _NO_RULE:
    register_gradient(_op_type)(_unsupported)

# Integer, boolean or input-less results: nothing flows back.
for _op_type in ("EmptyTensorList", "TensorListReserve", "TensorListLength",
                 "TensorListElementShape", "OptionalNone", "OptionalHasValue"):
    NotDifferentiable(_op_type)
