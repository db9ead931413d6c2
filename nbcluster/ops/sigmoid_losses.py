"""tf.nn.sigmoid_cross_entropy_with_logits and weighted_cross_entropy_with_logits.

Rule: composed of existing ops as TF 1.15 composes them (no fused op exists in TF
either), so graphs match TF's and gradients come from those ops' rules; the forms
are the stable ones: max(x, 0) - x * z + log1p(exp(-|x|)).
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.operation import Tensor
from nbcluster.ops import math as m
from nbcluster.ops.fill import zeros_like
from nbcluster.ops.indexing import where
from nbcluster.ops.math import FLOATS, check_dtype


def _labels_and_logits(graph, labels, logits) -> tuple:
    logits = convert_to_tensor(logits, name="logits", graph=graph)
    check_dtype(logits.dtype, FLOATS, "logits")
    labels = convert_to_tensor(labels, dtype=logits.dtype, name="labels", graph=graph)
    try:
        logits.shape.merge_with(labels.shape)
    except ValueError:
        raise ValueError(f"logits and labels must have the same shape "
                         f"({logits.shape} vs {labels.shape})") from None
    return labels, logits


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                      name: Optional[str] = None) -> Tensor:
    """The logistic loss of each entry: -z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x)).

    Args:
      labels: z, of logits' shape (cast to its dtype). logits: x, a float Tensor.
      Both by keyword, as TF requires.
    Returns: a Tensor of logits' shape and dtype.
    Raises: ValueError when a positional argument is given or the shapes differ.

    Example:
      >>> sigmoid_cross_entropy_with_logits(labels=[1., 0.], logits=[2., -1.]).shape
      TensorShape([2])
    """
    if _sentinel is not None:
        raise ValueError("Only call `sigmoid_cross_entropy_with_logits` with named "
                         "arguments (labels=..., logits=..., ...)")
    graph = graph_of(labels, logits)
    with graph.as_default(), graph.name_scope(name or "logistic_loss") as scope:
        labels, logits = _labels_and_logits(graph, labels, logits)
        zeros = zeros_like(logits)
        cond = m.greater_equal(logits, zeros)
        relu_logits = where(cond, logits, zeros)
        neg_abs_logits = where(cond, m.negative(logits), logits)
        return m.add(m.subtract(relu_logits, m.multiply(logits, labels)),
                     m.log1p(m.exp(neg_abs_logits)), name=scope)


def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None,
                                       name: Optional[str] = None) -> Tensor:
    """The logistic loss with positives weighted by `pos_weight`:
    (1 - z) x + (1 + (q - 1) z) (log1p(exp(-|x|)) + max(-x, 0)).

    Args:
      labels: z, of logits' shape. logits: x, a float Tensor. pos_weight: q, a
        coefficient (scalar or broadcastable) on the positive examples' loss.
    Returns: a Tensor of logits' shape and dtype.
    Raises: ValueError when the shapes differ.
    """
    graph = graph_of(labels, logits, pos_weight)
    with graph.as_default(), graph.name_scope(name or "logistic_loss") as scope:
        labels, logits = _labels_and_logits(graph, labels, logits)
        q = convert_to_tensor(pos_weight, dtype=logits.dtype, name="pos_weight", graph=graph)
        log_weight = m.add(m.multiply(m.subtract(q, 1.0), labels), 1.0)
        softplus_neg = m.add(m.log1p(m.exp(m.negative(m.abs(logits)))),
                             m.maximum(m.negative(logits), 0.0))
        return m.add(m.multiply(m.subtract(1.0, labels), logits),
                     m.multiply(log_weight, softplus_neg), name=scope)
