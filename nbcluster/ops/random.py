"""Random ops and TF1's seed rule.

Graph shape follows TF1: the random op draws a standard sample, and
`random_normal`/`truncated_normal` scale and shift it with Mul and AddV2
(`random_uniform` with Sub, Mul and AddV2), so mean/stddev may be tensors and
gradients reach them. The op attrs `seed`/`seed2` come from `get_seed`: with
no graph or op seed both are 0 and every session draws fresh values; otherwise
the same graph in a fresh session gives the same values, and each run of the
op draws the next ones.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph, graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor
from nbcluster.ops import math as math_ops
from nbcluster.ops.array import index_tensor
from nbcluster.ops.shape_inference import INDEX_TYPES, check_rank, shape_from_input

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2 ** 31 - 1
_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)


def set_random_seed(seed: Optional[int]) -> None:
    """Sets the graph-level seed of the default graph (None clears it)."""
    get_default_graph().seed = seed


def get_seed(op_seed: Optional[int], graph=None) -> tuple:
    """TF1's rule: (graph seed, op seed) -> the (seed, seed2) attrs of a random op.

    No seed anywhere gives (None, None); a graph seed alone pairs it with the
    graph's op count, so ops built in the same order get the same seeds.
    """
    graph = graph or get_default_graph()
    if graph.seed is not None:
        op_seed = graph.version if op_seed is None else op_seed
        seeds = (graph.seed % _MAXINT32, op_seed % _MAXINT32)
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, op_seed % _MAXINT32)
    else:
        return None, None
    # (0, 0) means "nondeterministic" to the kernels, so avoid it.
    return (0, _MAXINT32) if seeds == (0, 0) else seeds


def _seed_attrs(seed: Optional[int], graph) -> dict:
    seed1, seed2 = get_seed(seed, graph)
    return {"seed": seed1 or 0, "seed2": seed2 or 0}


# -- shape functions ------------------------------------------------------------
def _sampled_shape(op):
    return [(op.get_attr("dtype"), shape_from_input(op, 0))]


for _type in ("RandomStandardNormal", "RandomUniform", "TruncatedNormal"):
    register_op(_type, stateful=True)(_sampled_shape)


@register_op("RandomShuffle", stateful=True)
def _shuffle_shape(op):
    return [(op.inputs[0].dtype, op.inputs[0].shape)]


@register_op("RandomUniformInt", stateful=True)
def _uniform_int_shape(op):
    check_rank(op, 1, 0)
    check_rank(op, 2, 0)
    return [(op.get_attr("Tout"), shape_from_input(op, 0))]


# -- constructors ------------------------------------------------------------------
def _check_float(dtype: dtypes.DType) -> None:
    if dtype not in _FLOATS:
        raise TypeError(f"Value passed to parameter 'dtype' has DataType {dtype.name} not in "
                        f"list of allowed values: float16, float32, float64")


def _sample(graph, op_type: str, shape: Tensor, dtype, seed) -> Tensor:
    attrs = {"dtype": dtype, "T": shape.dtype, **_seed_attrs(seed, graph)}
    return graph.create_op(op_type, [shape], attrs, name=op_type).outputs[0]


def _scaled_normal(op_type, default, shape, mean, stddev, dtype, seed, name) -> Tensor:
    dtype = dtypes.as_dtype(dtype)
    graph = graph_of(shape, mean, stddev)
    with graph.name_scope(name or default) as scope:
        shape_t = index_tensor(shape, "shape", graph)
        mean_t = convert_to_tensor(mean, dtype=dtype, name="mean", graph=graph)
        stddev_t = convert_to_tensor(stddev, dtype=dtype, name="stddev", graph=graph)
        _check_float(dtype)
        rnd = _sample(graph, op_type, shape_t, dtype, seed)
        return math_ops.add(math_ops.multiply(rnd, stddev_t, name="mul"), mean_t, name=scope)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                  seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """Samples of a normal distribution: RandomStandardNormal * stddev + mean.

    Example:
      >>> set_random_seed(1)
      >>> random_normal([2, 3]).op.type
      'AddV2'
    """
    return _scaled_normal("RandomStandardNormal", "random_normal", shape, mean, stddev,
                          dtype, seed, name)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                     seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """Normal samples redrawn until within two standard deviations of the mean."""
    return _scaled_normal("TruncatedNormal", "truncated_normal", shape, mean, stddev,
                          dtype, seed, name)


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32,
                   seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """Uniform samples in [minval, maxval); maxval defaults to 1 for floats.

    Float dtypes give RandomUniform * (maxval - minval) + minval (Sub, Mul,
    AddV2); int32/int64 give one RandomUniformInt op.

    Raises: ValueError for other dtypes, or an integer dtype without maxval.
    """
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _FLOATS + INDEX_TYPES:
        raise ValueError(f"Invalid dtype {dtype!r}")
    if maxval is None:
        if dtype.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        maxval = 1
    graph = graph_of(shape, minval, maxval)
    with graph.name_scope(name or "random_uniform") as scope:
        shape_t = index_tensor(shape, "shape", graph)
        lo = convert_to_tensor(minval, dtype=dtype, name="min", graph=graph)
        hi = convert_to_tensor(maxval, dtype=dtype, name="max", graph=graph)
        attrs = _seed_attrs(seed, graph)
        if dtype.is_integer:
            attrs.update(Tout=dtype, T=shape_t.dtype)
            return graph.create_op("RandomUniformInt", [shape_t, lo, hi], attrs,
                                   name=scope).outputs[0]
        attrs.update(dtype=dtype, T=shape_t.dtype)
        rnd = graph.create_op("RandomUniform", [shape_t], attrs, name="RandomUniform")
        span = math_ops.subtract(hi, lo, name="sub")
        return math_ops.add(math_ops.multiply(rnd.outputs[0], span, name="mul"), lo, name=scope)


def random_shuffle(value, seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """`value` with its first dimension in a random order (op RandomShuffle).

    Seeds follow `get_seed`: a seeded graph shuffles alike in every session.

    Example:
      >>> random_shuffle(convert_to_tensor([1, 2, 3]), seed=4).op.type
      'RandomShuffle'
    """
    graph = graph_of(value)
    with graph.as_default(), graph.name_scope(name or "RandomShuffle") as scope:
        value = convert_to_tensor(value, name="value", graph=graph)
        attrs = {"T": value.dtype, **_seed_attrs(seed, graph)}
        return graph.create_op("RandomShuffle", [value], attrs, name=scope).outputs[0]
