"""Facade: tf.math, the math ops of `ops/` under their TF1 `tf.math.` names (defines nothing).

A subset of TF's, growing.
"""
from nbcluster.ops.indexing import unsorted_segment_sum
from nbcluster.ops.logic import (
                                 is_finite,
                                 is_inf,
                                 is_nan,
                                 logical_and,
                                 logical_not,
                                 logical_or,
                                 logical_xor,
)
from nbcluster.ops.math import (  # noqa: A004
                                 abs,
                                 add,
                                 add_n,
                                 divide,
                                 equal,
                                 exp,
                                 floordiv,
                                 floormod,
                                 greater,
                                 greater_equal,
                                 less,
                                 less_equal,
                                 log,
                                 log1p,
                                 maximum,
                                 minimum,
                                 multiply,
                                 negative,
                                 not_equal,
                                 pow,
                                 reciprocal,
                                 rsqrt,
                                 sign,
                                 sqrt,
                                 square,
                                 squared_difference,
                                 subtract,
                                 tanh,
)
from nbcluster.ops.math import div_no_nan as divide_no_nan
from nbcluster.ops.math import floormod as mod
from nbcluster.ops.reduction import (
                                 argmax,
                                 argmin,
                                 count_nonzero,
                                 cumprod,
                                 cumsum,
                                 reduce_all,
                                 reduce_any,
                                 reduce_max,
                                 reduce_mean,
                                 reduce_min,
                                 reduce_prod,
                                 reduce_sum,
)

__all__ = ["abs", "add", "add_n", "argmax", "argmin", "count_nonzero", "divide", "divide_no_nan", "equal",
           "exp", "floordiv", "floormod", "mod", "greater", "greater_equal", "is_finite", "is_inf", "is_nan", "less",
           "less_equal", "log", "log1p", "logical_and", "logical_not", "logical_or", "logical_xor",
           "maximum", "minimum", "multiply", "negative", "not_equal", "pow", "reduce_all",
           "reduce_any", "reduce_max", "reduce_mean", "reduce_min", "reduce_sum", "sign",
           "reciprocal", "rsqrt", "sqrt", "square", "squared_difference", "subtract", "tanh", "unsorted_segment_sum", "reduce_prod",
           "cumsum", "cumprod"]
