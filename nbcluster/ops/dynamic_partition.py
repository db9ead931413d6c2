"""tf.dynamic_partition (DynamicPartition) and its inverse tf.dynamic_stitch (DynamicStitch,
ParallelDynamicStitch), with their shape functions.

TF's embedding_lookup over several shards and its gradients of reductions over
unknown shapes build these, so GraphDefs TF serialized carry them. Rule: a
partition's or an index tensor's shape is a prefix of its data's; the values
are checked by the kernels (`kernels/dynamic_partition.py`).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape, unknown_shape
from nbcluster.ops.math import check_dtype
from nbcluster.ops.shape_inference import constant_value, shape_error


def _trailing(op, data: TensorShape, prefix: TensorShape, what: str) -> TensorShape:
    """data's dimensions after the prefix, checking that `prefix` starts data's shape."""
    if data.rank is None or prefix.rank is None:
        return unknown_shape()
    if not TensorShape(data.dims[:prefix.rank]).is_compatible_with(prefix):
        raise shape_error(op, f"{what} shape {prefix} is not a prefix of the data shape {data}")
    return TensorShape(data.dims[prefix.rank:])


@register_op("DynamicPartition")
def _dynamic_partition_shape(op):
    data, partitions = op.inputs
    check_dtype(partitions.dtype, (dtypes.int32,), "partitions")
    rest = _trailing(op, data.shape, partitions.shape, "partitions")
    shape = unknown_shape() if rest.rank is None else TensorShape([None] + rest.as_list())
    return [(data.dtype, shape)] * op.get_attr("num_partitions")


@register_op("DynamicStitch")
def _dynamic_stitch_shape(op):
    n = op.get_attr("N")
    indices, data = op.inputs[:n], op.inputs[n:]
    rest: Optional[TensorShape] = None
    for index, values in zip(indices, data):
        check_dtype(index.dtype, (dtypes.int32,), "indices")
        if values.dtype != data[0].dtype:
            raise TypeError(f"DynamicStitch '{op.name}': data[0] is {data[0].dtype.name} but "
                            f"data has {values.dtype.name}")
        part = _trailing(op, values.shape, index.shape, "indices")
        if part.rank is not None:
            if rest is not None and not rest.is_compatible_with(part):
                raise shape_error(op, f"data and indices give the trailing shapes {rest} "
                                      f"and {part}")
            rest = part
    known = [constant_value(i) for i in indices]
    first = None if any(v is None for v in known) else \
        int(max((int(np.max(v)) for v in known if np.size(v)), default=-1)) + 1
    shape = unknown_shape() if rest is None else TensorShape([first] + rest.as_list())
    return [(data[0].dtype, shape)]


# TF's embedding_lookup stitches shards with this twin (which of repeated indices wins
# is unspecified there; here the later, as in DynamicStitch)
register_op("ParallelDynamicStitch")(_dynamic_stitch_shape)


def dynamic_partition(data, partitions, num_partitions: int, name=None) -> list:
    """`num_partitions` tensors, the i-th holding the entries of `data` whose
    partition is i, in order (op DynamicPartition).

    >>> dynamic_partition([10, 20, 30], [1, 0, 1], 2)  # [[20], [10, 30]]
    """
    graph = graph_of(data, partitions)
    with graph.as_default(), graph.name_scope(name or "DynamicPartition") as scope:
        d = convert_to_tensor(data, name="data", graph=graph)
        p = convert_to_tensor(partitions, name="partitions", graph=graph)
        return list(graph.create_op("DynamicPartition", [d, p],
                                    {"T": d.dtype, "num_partitions": int(num_partitions)},
                                    name=scope).outputs)


def dynamic_stitch(indices, data, name=None) -> Tensor:
    """One tensor with merged[indices[m][i]] = data[m][i] (op DynamicStitch); where
    indices repeat, the later data win.

    >>> dynamic_stitch([[0, 2], [1]], [[1., 3.], [2.]])  # [1., 2., 3.]
    """
    graph = graph_of(*indices, *data)
    with graph.as_default(), graph.name_scope(name or "DynamicStitch") as scope:
        index_tensors = [convert_to_tensor(i, graph=graph) for i in indices]
        data_tensors = [convert_to_tensor(d, graph=graph) for d in data]
        if len(index_tensors) != len(data_tensors) or not index_tensors:
            raise ValueError(f"dynamic_stitch needs as many data as indices (at least one), "
                             f"got {len(data_tensors)} and {len(index_tensors)}")
        return graph.create_op("DynamicStitch", index_tensors + data_tensors,
                               {"N": len(index_tensors), "T": data_tensors[0].dtype},
                               name=scope).outputs[0]
