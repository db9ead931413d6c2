"""Clipping: tf.clip_by_value, tf.clip_by_norm, tf.global_norm, tf.clip_by_global_norm.

Rule: every function is composed of existing ops the way TF 1.15 composes it
(clip_by_value is Minimum then Maximum, norms are Sum of Square then Sqrt),
so graphs match TF's and gradients come from those ops' rules: a value that
was clipped gets no gradient, one that was not gets it unchanged. The global
norm functions take IndexedSlices as TF does: their values count (repeated
indices counted separately) and stay sparse when scaled.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.indexed_slices import IndexedSlices
from nbcluster.framework.operation import Tensor
from nbcluster.ops import array
from nbcluster.ops import math as m
from nbcluster.ops.fill import ones_like
from nbcluster.ops.math import FLOATS, check_dtype
from nbcluster.ops.reduction import reduce_sum


def clip_by_value(t, clip_value_min, clip_value_max, name: Optional[str] = None) -> Tensor:
    """`t` with each value limited to [clip_value_min, clip_value_max].

    Args:
      t: a real Tensor. clip_value_min, clip_value_max: scalars or Tensors that
        broadcast to t's shape (they must not make the result bigger).
    Returns: a Tensor of t's dtype and shape (TF: Maximum(Minimum(t, max), min)).
    Raises: ValueError when the bounds would broadcast `t` to a larger shape.

    Example:
      >>> clip_by_value(constant([-2., 0.5, 3.]), -1., 1.).shape
      TensorShape([3])
    """
    graph = graph_of(t, clip_value_min, clip_value_max)
    with graph.as_default(), graph.name_scope(name or "clip_by_value") as scope:
        values = convert_to_tensor(t, name="t", graph=graph)
        lower = m.minimum(values, clip_value_max)
        _check_not_broadcast(values, lower)
        clipped = m.maximum(lower, clip_value_min, name=scope)
        _check_not_broadcast(values, clipped)
        return clipped


def _check_not_broadcast(values: Tensor, result: Tensor) -> None:
    if not values.shape.is_compatible_with(result.shape):
        raise ValueError(f"Shapes {values.shape} and {result.shape} are incompatible: "
                         f"clipping bounds must not broadcast t to a larger shape")


def _sum_of_squares(t: Tensor, axes=None) -> Tensor:
    return reduce_sum(m.square(t), axes, keepdims=axes is not None)


def clip_by_norm(t, clip_norm, axes=None, name: Optional[str] = None) -> Tensor:
    """`t` scaled down so that its L2 norm over `axes` is at most `clip_norm`.

    t * clip_norm / max(norm(t), clip_norm); a zero t stays zero (its gradient
    is finite too).

    Args: t: a float Tensor. clip_norm: a positive scalar. axes: the dims the
      norm is taken over (default: all).
    Returns: a Tensor of t's dtype and shape.
    Raises: TypeError for a non-float t.
    """
    graph = graph_of(t, clip_norm)
    with graph.as_default(), graph.name_scope(name or "clip_by_norm") as scope:
        values = convert_to_tensor(t, name="t", graph=graph)
        check_dtype(values.dtype, FLOATS, "t")
        l2sum = reduce_sum(m.square(values), axes, keepdims=True)
        nonzero = m.greater(l2sum, 0)
        # sqrt's gradient at 0 is infinite: take it of 1 where the sum is 0.
        safe = m.where_v2(nonzero, l2sum, ones_like(l2sum))
        l2norm = m.where_v2(nonzero, m.sqrt(safe), l2sum)
        scaled = m.multiply(values, clip_norm)
        divisor = m.maximum(l2norm, m.cast(clip_norm, values.dtype))
        return array.identity(m.realdiv(scaled, divisor), name=scope)


def _present(t_list) -> list:
    if isinstance(t_list, (str, bytes)) or not isinstance(t_list, (list, tuple)):
        raise TypeError(f"t_list should be a sequence, got {type(t_list).__name__}")
    return [t for t in t_list if t is not None]


def _dense_part(t):
    """The tensor the norm reads: an IndexedSlices' values, anything else as is."""
    return t.values if isinstance(t, IndexedSlices) else t


def global_norm(t_list, name: Optional[str] = None) -> Tensor:
    """sqrt(sum of the squares of every element of every tensor in t_list).

    None entries are ignored, as in TF.

    Args: t_list: a list or tuple of float Tensors, IndexedSlices (their
      values count) or None.
    Returns: a scalar Tensor of their dtype.
    Raises: TypeError when t_list is not a sequence.

    Example:
      >>> global_norm([constant([3.0]), constant([4.0])]).shape
      TensorShape([])
    """
    tensors = [_dense_part(t) for t in _present(t_list)]
    graph = graph_of(*tensors)
    with graph.as_default(), graph.name_scope(name or "global_norm") as scope:
        values = [convert_to_tensor(t, name=f"t_{i}", graph=graph)
                  for i, t in enumerate(tensors)]
        if not values:
            raise ValueError("global_norm needs at least one tensor that is not None")
        squares = [_sum_of_squares(v) for v in values]
        total = reduce_sum(array.stack(squares) if len(squares) > 1 else squares[0])
        return m.sqrt(total, name=scope)


def clip_by_global_norm(t_list, clip_norm, use_norm=None,
                        name: Optional[str] = None) -> tuple:
    """Scales every tensor of t_list by clip_norm / max(global_norm, clip_norm).

    Args:
      t_list: a list or tuple of float Tensors or IndexedSlices (which come
        back as IndexedSlices with scaled values; None entries stay None).
      clip_norm: a positive scalar. use_norm: a precomputed global norm.
    Returns: (list_clipped, global_norm). If the norm is inf or NaN, every
      clipped value is NaN, as in TF (a signal, not a silent pass).
    Raises: TypeError when t_list is not a sequence.

    Example:
      >>> clipped, norm = clip_by_global_norm([constant([3.0, 4.0])], 1.0)
    """
    present = _present(t_list)
    graph = graph_of(*[_dense_part(t) for t in present], clip_norm, use_norm)
    with graph.as_default(), graph.name_scope(name or "clip_by_global_norm"):
        norm = global_norm(present) if use_norm is None else \
            convert_to_tensor(use_norm, graph=graph)
        clip = m.cast(clip_norm, norm.dtype)
        finite_scale = m.multiply(clip, m.minimum(m.realdiv(1.0, norm),
                                                  m.realdiv(1.0, clip)))
        # norm - norm is 0, or NaN for an infinite norm, which then taints the scale.
        scale = m.add(finite_scale, m.subtract(norm, norm))
        clipped = []
        for i, t in enumerate(t_list):
            if t is None:
                clipped.append(None)
                continue
            value = convert_to_tensor(_dense_part(t), name=f"t_{i}", graph=graph)
            scaled = array.identity(m.multiply(value, m.cast(scale, value.dtype)),
                                    name=f"clipped_{i}")
            clipped.append(IndexedSlices(scaled, t.indices, t.dense_shape)
                           if isinstance(t, IndexedSlices) else scaled)
        return clipped, norm
