"""tf.nn.embedding_lookup: rows of an embedding table, gathered next to the table.

Rule: composed of existing ops as TF 1.15 composes it: one GatherV2 built
colocated with the table, so on a parameter server the lookup runs on the ps
and only the looked-up rows travel to the worker; its gradient is an
IndexedSlices of those rows, so only they travel back. A table in shards
(a PartitionedVariable, each shard on its own ps) is looked up shard by shard,
each gather on its shard's task, and the rows put back in the ids' order.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.operation import Tensor, as_tensor_or_op
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.ops import array, indexing, math, ranges, shapes
from nbcluster.ops.clipping import clip_by_norm
from nbcluster.ops.indexing import gather
from nbcluster.ops.partitioned_variables import shards_of

PARTITION_STRATEGIES = ("mod", "div")


def embedding_lookup(params, ids, partition_strategy: str = "mod", name: Optional[str] = None,
                     validate_indices: bool = True, max_norm=None) -> Tensor:
    """The rows of `params` named by `ids`: a Tensor ids.shape + params.shape[1:].

    Args:
      params: the embedding table: a Tensor or Variable, a PartitionedVariable
        (`get_variable(partitioner=...)`), or a list of its shards along axis 0.
      ids: an int32/int64 Tensor of any shape; each entry in [0, total rows).
      partition_strategy: with several shards, which shard holds row `id`:
        "mod" (shard id % n, row id // n) or "div" (contiguous blocks, the
        first total % n shards one row larger), as TF.
      name: the name scope (default "embedding_lookup").
      validate_indices: ignored, as in TF (the gathers always check their indices).
      max_norm: if given, each looked-up row with an L2 norm above it is
        scaled down to it.
    Returns: a Tensor of params' dtype and shape ids.shape + params.shape[1:].
    Raises:
      ValueError: no params, or partition_strategy is unknown.
    Example:
      >>> table = Variable(random_normal([1000, 16]))
      >>> rows = embedding_lookup(table, constant([[3, 7], [7, 0]]))   # [2, 2, 16]
    """
    # TF2's lookup on a ShardedVariable is always "div": its shards hold contiguous rows
    partition_strategy = getattr(params, "_lookup_partition_strategy", partition_strategy)
    if partition_strategy not in PARTITION_STRATEGIES:
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy!r}; expected "
                         f"one of {PARTITION_STRATEGIES}")
    shards = shards_of(params)
    if not shards:
        raise ValueError("Need at least one param")
    graph = graph_of(shards[0], ids)
    with graph.as_default(), graph.name_scope(name or "embedding_lookup") as scope:
        if len(shards) == 1:
            table = as_tensor_or_op(shards[0])
            # Next to the table, as TF does: only the gathered rows leave its task.
            with graph.colocate_with(table.op):
                looked_up = gather(shards[0], ids, name=scope if max_norm is None else None)
        else:
            looked_up = _sharded(graph, shards, convert_to_tensor(ids, graph=graph),
                                 partition_strategy)
        if max_norm is None:
            return looked_up if len(shards) == 1 else array.identity(looked_up, name=scope)
        return _clipped(looked_up, convert_to_tensor(ids, graph=graph), max_norm, scope)


def _sharded(graph, shards: list, ids: Tensor, strategy: str) -> Tensor:
    """Each shard gathers its own rows where it lives; the rows go back to the
    ids' order by position (UnsortedSegmentSum of one row per position)."""
    flat = shapes.reshape(ids, [-1])
    shard_of, row_in = _assign(flat, shards, strategy)
    positions = ranges.range(0, shapes.size(flat), dtype=flat.dtype)
    rows, where = [], []
    for i, shard in enumerate(shards):
        mine = math.equal(shard_of, math.cast(i, shard_of.dtype))
        table = as_tensor_or_op(shard)
        with graph.colocate_with(table.op):
            rows.append(gather(shard, indexing.boolean_mask(row_in, mine)))
        where.append(indexing.boolean_mask(positions, mine))
    stitched = indexing.unsorted_segment_sum(array.concat(rows, 0), array.concat(where, 0),
                                             shapes.size(flat))
    tail = shapes.shape(stitched)[1:]
    out = shapes.reshape(stitched, array.concat([shapes.shape(ids), tail], 0))
    row = TensorShape(shards[0].get_shape()).dims[1:] if hasattr(shards[0], "get_shape") \
        else None
    if row is not None and ids.shape.rank is not None:
        out.set_shape(TensorShape(ids.shape.dims + row))
    return out


def _assign(ids: Tensor, shards: list, strategy: str) -> tuple:
    """(shard of each id, its row in that shard) for `strategy` over `shards`."""
    n = len(shards)
    if strategy == "mod":
        return math.floormod(ids, n), math.floordiv(ids, n)
    sizes = [shard.get_shape()[0] for shard in shards]
    if any(size is None for size in sizes):
        raise ValueError("partition_strategy 'div' needs every shard's first dimension known")
    total = sum(int(size) for size in sizes)
    per, extras = divmod(total, n)
    # the first `extras` shards hold per + 1 rows, the others per
    big = math.floordiv(ids, per + 1)
    small = math.floordiv(ids - extras, per) if per else big
    shard_of = math.maximum(big, small)
    row_in = math.where_v2(math.less(shard_of, extras), math.floormod(ids, per + 1),
                           math.floormod(ids - extras, per) if per else ids)
    return shard_of, row_in


def _clipped(rows: Tensor, ids: Tensor, max_norm, scope: str) -> Tensor:
    """Each row (the dims after ids') scaled to an L2 norm of at most max_norm."""
    if rows.shape.rank is None or ids.shape.rank is None:
        raise NotImplementedError("embedding_lookup with max_norm needs ids and params of "
                                  "known rank")
    axes = list(range(ids.shape.rank, rows.shape.rank))
    clipped = clip_by_norm(rows, max_norm, axes=axes)
    return array.identity(clipped, name=scope)
