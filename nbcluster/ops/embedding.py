"""tf.nn.embedding_lookup: rows of an embedding table, gathered next to the table.

Rule: composed of existing ops as TF 1.15 composes it: one GatherV2 built
colocated with the table, so on a parameter server the lookup runs on the ps
and only the looked-up rows travel to the worker; its gradient is an
IndexedSlices of those rows, so only they travel back. Only a single
(unpartitioned) table is supported.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.operation import Tensor, as_tensor_or_op
from nbcluster.ops import array
from nbcluster.ops.clipping import clip_by_norm
from nbcluster.ops.indexing import gather

PARTITION_STRATEGIES = ("mod", "div")


def embedding_lookup(params, ids, partition_strategy: str = "mod", name: Optional[str] = None,
                     validate_indices: bool = True, max_norm=None) -> Tensor:
    """The rows of `params` named by `ids`: a Tensor ids.shape + params.shape[1:].

    Args:
      params: a Tensor or Variable (the embedding table), or a list holding
        exactly one of them.
      ids: an int32/int64 Tensor of any shape; each entry in [0, params.shape[0]).
      partition_strategy: "mod" or "div"; only matters for partitioned tables,
        which are not supported.
      name: the name scope (default "embedding_lookup").
      validate_indices: ignored, as in TF (the gather always checks its indices).
      max_norm: if given, each looked-up row with an L2 norm above it is
        scaled down to it.
    Returns: a Tensor of params' dtype and shape ids.shape + params.shape[1:].
    Raises:
      ValueError: params is empty, or partition_strategy is unknown.
      NotImplementedError: params is a list of more than one (partitioned) table.
    Example:
      >>> table = Variable(random_normal([1000, 16]))
      >>> rows = embedding_lookup(table, constant([[3, 7], [7, 0]]))   # [2, 2, 16]
    """
    if partition_strategy not in PARTITION_STRATEGIES:
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy!r}; expected "
                         f"one of {PARTITION_STRATEGIES}")
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError("Need at least one param")
        if len(params) > 1:
            raise NotImplementedError(f"embedding_lookup over a partitioned table ({len(params)}"
                                      f" shards) is not implemented; pass one table")
        params = params[0]
    graph = graph_of(params, ids)
    with graph.as_default(), graph.name_scope(name or "embedding_lookup") as scope:
        table = as_tensor_or_op(params)
        # Next to the table, as TF does: only the gathered rows leave its task.
        with graph.colocate_with(table.op):
            looked_up = gather(params, ids, name=scope if max_norm is None else None)
        if max_norm is None:
            return looked_up
        return _clipped(looked_up, convert_to_tensor(ids, graph=graph), max_norm, scope)


def _clipped(rows: Tensor, ids: Tensor, max_norm, scope: str) -> Tensor:
    """Each row (the dims after ids') scaled to an L2 norm of at most max_norm."""
    if rows.shape.rank is None or ids.shape.rank is None:
        raise NotImplementedError("embedding_lookup with max_norm needs ids and params of "
                                  "known rank")
    axes = list(range(ids.shape.rank, rows.shape.rank))
    clipped = clip_by_norm(rows, max_norm, axes=axes)
    return array.identity(clipped, name=scope)
