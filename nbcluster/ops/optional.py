"""Optional ops, by TensorFlow's names: a value that may be absent, as a DT_VARIANT scalar.

Rule: TF2's `tf.cond` hands a branch's intermediates to its gradient in
optionals (the branch not taken gives OptionalNone); tf.data's
`get_next_as_optional` makes them too. These come from imported TF2 graphs.
Kernels: kernels/optional.py.
"""
from __future__ import annotations

from nbcluster.framework import dtypes
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.tensor_shape import scalar
from nbcluster.ops.functional import outputs_from_attrs


@register_op("OptionalFromValue")
def _from_value(op) -> list:
    return [(dtypes.variant, scalar())]


@register_op("OptionalNone")
def _none(op) -> list:
    return [(dtypes.variant, scalar())]


@register_op("OptionalHasValue", ref_inputs=(0,))
def _has_value(op) -> list:
    return [(dtypes.bool, scalar())]


@register_op("OptionalGetValue", ref_inputs=(0,))
def _get_value(op) -> list:
    return outputs_from_attrs(op, "output_types")
