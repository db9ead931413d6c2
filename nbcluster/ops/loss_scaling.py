"""Loss scaling composed of other ops: tf.nn.compute_average_loss."""
from __future__ import annotations

from typing import Optional

from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.operation import Tensor
from nbcluster.ops import math as m
from nbcluster.ops.reduction import reduce_sum
from nbcluster.ops.shape_inference import constant_value
from nbcluster.ops.shapes import shape


def compute_average_loss(per_example_loss, sample_weight=None,
                         global_batch_size: Optional[int] = None) -> Tensor:
    """sum(per_example_loss * sample_weight) / global_batch_size, as TF2 scales a
    replica's loss so that replicas' gradients add up to the global mean.

    Args:
      per_example_loss: a float Tensor of rank 1 or more (one loss per example).
      sample_weight: optional weights, broadcast against the losses.
      global_batch_size: the examples of one step over all replicas; default
        the batch dimension of `per_example_loss` times the replicas in sync
        (1: each worker of a parameter-server cluster is its own replica).
    Returns: a scalar of the losses' dtype.
    Raises:
      ValueError: a scalar `per_example_loss`, or a global_batch_size that is
        not a positive integer scalar.
    Example:
      >>> compute_average_loss(constant([1.0, 3.0]), global_batch_size=4)  # 1.0
    """
    graph = graph_of(per_example_loss, sample_weight, global_batch_size)
    with graph.as_default():
        losses = convert_to_tensor(per_example_loss, name="per_example_loss")
        if losses.shape.rank == 0:
            raise ValueError("Invalid value passed for `per_example_loss`. Expected a tensor "
                             "with at least rank 1.")
        if sample_weight is not None:
            weights = m.cast(convert_to_tensor(sample_weight, name="sample_weight"),
                             losses.dtype)
            losses = m.multiply(losses, weights)
        if global_batch_size is None:
            count = shape(losses)[0]
        else:
            count = convert_to_tensor(global_batch_size, name="global_batch_size")
            known = constant_value(count)
            if count.shape.rank not in (None, 0) or not count.dtype.is_integer:
                raise ValueError(f"global_batch_size must be an integer scalar, got "
                                 f"{global_batch_size!r}")
            if known is not None and int(known) <= 0:
                raise ValueError(f"global_batch_size must be positive, got {int(known)}")
        return m.realdiv(reduce_sum(losses), m.cast(count, losses.dtype))


__all__ = ["compute_average_loss"]
