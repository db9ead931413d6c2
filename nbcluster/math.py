"""tf.math: the math ops under their TF1 `tf.math.` names (a subset, growing)."""
from nbcluster.ops.indexing import unsorted_segment_sum
from nbcluster.ops.logic import (is_finite, is_inf, is_nan, logical_and, logical_not,
                                 logical_or, logical_xor)
from nbcluster.ops.reduction import count_nonzero, reduce_all, reduce_any

__all__ = ["count_nonzero", "is_finite", "is_inf", "is_nan", "logical_and", "logical_not",
           "logical_or", "logical_xor", "reduce_all", "reduce_any", "unsorted_segment_sum"]
