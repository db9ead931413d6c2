"""Facade: tf.random, the random ops under their `tf.compat.v1.random.` names (defines nothing).

Seeds follow TF1 (`ops/random.py`): a graph seed set by `set_random_seed`
and an op's own `seed` together fix an op's sequence, the same in every
session of the graph; with neither, every session draws fresh values.
"""
from nbcluster.ops.random import get_seed, set_random_seed, truncated_normal
from nbcluster.ops.random import random_normal as normal
from nbcluster.ops.random import random_shuffle as shuffle
from nbcluster.ops.random import random_uniform as uniform

__all__ = ["get_seed", "normal", "set_random_seed", "shuffle", "truncated_normal", "uniform"]
