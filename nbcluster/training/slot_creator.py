"""Slot variables: an optimizer's per-variable state, colocated with its variable.

Rule: a slot is built outside any name scope and control block, under
`colocate_with(primary.op)`, so it lands on the primary's device (a ps task
under replica_device_setter) whatever device scope is active. It is named
"<primary op name>/<name>" (uniqued: "w/Adam", "w/Adam_1"), not trainable,
and in the global variables collection, so the global initializer covers it.
"""
from __future__ import annotations

from typing import Callable

from nbcluster.framework import dtypes
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.ops import fill as fill_ops
from nbcluster.ops.state import Variable


def _in_root_scope(primary: Variable, make: Callable[[], Variable]) -> Variable:
    graph = primary.graph
    with graph.as_default(), graph.name_scope(None), graph.control_dependencies(None), \
            graph.colocate_with(primary.op, ignore_existing=True):
        return make()


def create_slot(primary: Variable, val, name: str) -> Variable:
    """A slot for `primary` whose initial value is `val` (a Tensor, array or callable).

    Args:
      primary: the variable the slot belongs to.
      val: the slot's initial value.
      name: the slot variable's name below the primary's ("Momentum").
    Returns: the slot Variable.
    """
    # A resource variable's slots are resource ones too: its ResourceApply* takes handles.
    return _in_root_scope(primary, lambda: Variable(
        val, trainable=False, name=f"{primary.op.name}/{name}",
        use_resource=primary._is_resource))


def create_slot_with_initializer(primary: Variable, initializer: Callable, shape, dtype,
                                 name: str) -> Variable:
    """A slot initialized by `initializer(shape, dtype)` (a function building a Tensor).

    Args:
      primary: the variable the slot belongs to.
      initializer: (shape as a list, DType) -> the initial value Tensor.
      shape: the slot's shape (fully defined).
      dtype: the slot's dtype.
      name: the slot variable's name below the primary's.
    Returns: the slot Variable.
    Raises:
      ValueError: `shape` is not fully defined.
    """
    shape = TensorShape(shape)
    if not shape.is_fully_defined():
        raise ValueError(f"Slot {name!r} of {primary.op.name} needs a fully defined shape, "
                         f"got {shape}")
    dtype = dtypes.as_dtype(dtype)
    return create_slot(primary, lambda: initializer(shape.as_list(), dtype), name)


def create_zeros_slot(primary: Variable, name: str, dtype=None) -> Variable:
    """A slot of zeros with the primary's shape (and dtype unless `dtype` is given).

    Returns: the slot Variable.
    """
    dtype = dtypes.as_dtype(dtype or primary.dtype)
    if primary.shape.is_fully_defined():
        return create_slot_with_initializer(
            primary, lambda shape, dt: fill_ops.zeros(shape, dtype=dt), primary.shape,
            dtype, name)
    # A shape known only at run time: zeros shaped like the primary's initial value.
    return create_slot(primary, lambda: fill_ops.zeros_like(primary.initial_value,
                                                             dtype=dtype), name)
