"""ConditionalAccumulator: averages gradients on its task, dropping stale ones.

TF 2.x builds the Resource* ops (ResourceConditionalAccumulator, ...), as the
class below does; TF 1.x's ref-handle ops are registered too, for GraphDefs
written by it, and run the same kernels.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes as dtypes_lib
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.tensor_shape import TensorShape, scalar, unknown_shape
from nbcluster.ops import math as math_ops

REDUCTION_TYPES = ("MEAN", "SUM")
_NUMBER_TYPES = (dtypes_lib.float16, dtypes_lib.float32, dtypes_lib.float64,
                 dtypes_lib.int8, dtypes_lib.int16, dtypes_lib.int32, dtypes_lib.int64,
                 dtypes_lib.uint8, dtypes_lib.uint16, dtypes_lib.complex64,
                 dtypes_lib.complex128)


@register_op("ConditionalAccumulator", stateful=True)
def _accumulator_shape(op):
    return [(dtypes_lib.resource, scalar())]


register_op("ResourceConditionalAccumulator", stateful=True)(_accumulator_shape)


def _check_input_dtype(op, index: int, expected, what: str) -> None:
    got = op.inputs[index].dtype
    if got != expected:
        raise ValueError(f"{op.type} '{op.name}': {what} must be {expected.name}, "
                         f"got {got.name}")


@register_op("AccumulatorApplyGradient", stateful=True, ref_inputs=(0,))
def _apply_shape(op):
    _check_input_dtype(op, 1, dtypes_lib.int64, "local_step")
    _check_input_dtype(op, 2, op.get_attr("dtype"), "gradient")
    return []


@register_op("AccumulatorTakeGradient", stateful=True, ref_inputs=(0,), blocking=True)
def _take_shape(op):
    _check_input_dtype(op, 1, dtypes_lib.int32, "num_required")
    # The op carries no shape attr (as in TF); the Python class sets the shape.
    return [(op.get_attr("dtype"), unknown_shape())]


@register_op("AccumulatorNumAccumulated", stateful=True, ref_inputs=(0,))
def _num_accumulated_shape(op):
    return [(dtypes_lib.int32, scalar())]


@register_op("AccumulatorSetGlobalStep", stateful=True, ref_inputs=(0,))
def _set_global_step_shape(op):
    _check_input_dtype(op, 1, dtypes_lib.int64, "new_global_step")
    return []


for _type, _shape in {"ApplyGradient": _apply_shape, "TakeGradient": _take_shape,
                      "NumAccumulated": _num_accumulated_shape,
                      "SetGlobalStep": _set_global_step_shape}.items():
    register_op(f"ResourceAccumulator{_type}", stateful=True, ref_inputs=(0,),
                blocking=_type == "TakeGradient")(_shape)


class ConditionalAccumulator:
    """Aggregates gradients of one shape; a take returns their average.

    A gradient applied with a `local_step` below the accumulator's global step
    is stale and dropped. `take_grad(n)` blocks until at least `n` gradients
    arrived, returns their mean (or sum), resets the aggregate and increments
    the accumulator's global step.

    Args:
      dtype: the gradients' dtype (a number type).
      shape: the gradients' shape (None: any, fixed by the first gradient).
      shared_name: share the accumulator under this name across sessions.
      name: the op's name.
      reduction_type: "MEAN" (default) or "SUM".
    Raises:
      TypeError: dtype is not a number type.
      ValueError: reduction_type is not "MEAN" or "SUM".
    Example:
      >>> acc = ConditionalAccumulator(tf.float32, shape=[2])
      >>> sess.run(acc.apply_grad([1.0, 3.0])); sess.run(acc.apply_grad([3.0, 5.0]))
      >>> sess.run(acc.take_grad(2))
      array([2., 4.], dtype=float32)
    """

    def __init__(self, dtype, shape=None, shared_name: Optional[str] = None,
                 name: str = "conditional_accumulator",
                 reduction_type: str = "MEAN") -> None:
        self._dtype = dtypes_lib.as_dtype(dtype)
        if self._dtype not in _NUMBER_TYPES:
            raise TypeError(f"ConditionalAccumulator dtype must be a number type, got "
                            f"{self._dtype.name}")
        if reduction_type not in REDUCTION_TYPES:
            raise ValueError(f"reduction_type must be one of {list(REDUCTION_TYPES)}, got "
                             f"{reduction_type!r}")
        self._shape = TensorShape(shape) if shape is not None else unknown_shape()
        self._graph = get_default_graph()
        self._accumulator_ref = self._graph.create_op(
            "ResourceConditionalAccumulator", [],
            {"dtype": self._dtype, "shape": self._shape, "container": "",
             "shared_name": shared_name or "", "reduction_type": reduction_type},
            name=name).outputs[0]
        self._name = self._accumulator_ref.op.name

    accumulator_ref = property(lambda self: self._accumulator_ref)
    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)

    def _op(self, op_type: str, inputs: list, name: Optional[str], **attrs):
        with self._graph.colocate_with(self._accumulator_ref.op):
            return self._graph.create_op(op_type, [self._accumulator_ref] + inputs, attrs,
                                         name=name or op_type)

    @staticmethod
    def _as_int(value, dtype, what: str):
        value = convert_to_tensor(value)
        if not value.dtype.is_integer:
            raise TypeError(f"{what} must be an integer, got {value.dtype.name}: {value!r}")
        return value if value.dtype == dtype else math_ops.cast(value, dtype)

    def apply_grad(self, grad, local_step=0, name: Optional[str] = None):
        """Adds `grad` unless `local_step` is older than the accumulator's global step.

        Args:
          grad: a tensor of the accumulator's dtype and shape.
          local_step: the step the gradient was computed at (cast to int64).
          name: the op's name.
        Returns: the ResourceAccumulatorApplyGradient Operation.
        Raises:
          ValueError: grad's dtype or shape does not match the accumulator's.
          TypeError: local_step is not an integer.
        """
        grad = convert_to_tensor(grad, dtype=self._dtype)
        if not grad.shape.is_compatible_with(self._shape):
            raise ValueError(f"Shape mismatch in apply_grad of '{self._name}': gradient "
                             f"shape {grad.shape} is incompatible with the accumulator "
                             f"shape {self._shape}")
        local_step = self._as_int(local_step, dtypes_lib.int64, "local_step")
        return self._op("ResourceAccumulatorApplyGradient", [local_step, grad],
                        name or "ResourceAccumulatorApplyGradient", dtype=self._dtype)

    def take_grad(self, num_required, name: Optional[str] = None):
        """The average (or sum) of the gradients, once at least `num_required` arrived.

        Blocks the step until enough gradients arrived; a RunOptions timeout or a
        closed session ends the wait.

        Returns: a Tensor of the accumulator's dtype and shape.
        Raises:
          TypeError: num_required is not an integer.
        """
        num_required = self._as_int(num_required, dtypes_lib.int32, "num_required")
        out = self._op("ResourceAccumulatorTakeGradient", [num_required],
                       name or "ResourceAccumulatorTakeGradient", dtype=self._dtype).outputs[0]
        out.set_shape(self._shape)
        return out

    def num_accumulated(self, name: Optional[str] = None):
        """An int32 Tensor: how many gradients the aggregate holds now."""
        return self._op("ResourceAccumulatorNumAccumulated", [],
                        name or f"{self._name}_NumAccumulated").outputs[0]

    def set_global_step(self, new_global_step, name: Optional[str] = None):
        """Sets the accumulator's global step (gradients of older steps are then stale).

        Raises:
          TypeError: new_global_step is not an integer.
        """
        step = self._as_int(new_global_step, dtypes_lib.int64, "new_global_step")
        return self._op("ResourceAccumulatorSetGlobalStep", [step],
                        name or "ResourceAccumulatorSetGlobalStep")
