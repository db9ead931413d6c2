"""tf.initializers: the initializer classes under their `tf.compat.v1.initializers.` names.

The classes are those of `ops/init_ops.py`; `he_*` and `lecun_*` are
VarianceScaling with TF's settings, and `global_variables` / `local_variables`
/ `variables` are the variable-initializer ops' builders, as in TF1.
"""
from typing import Optional

from nbcluster.ops.init_ops import Constant as constant
from nbcluster.ops.init_ops import GlorotNormal as glorot_normal
from nbcluster.ops.init_ops import GlorotUniform as glorot_uniform
from nbcluster.ops.init_ops import Ones as ones
from nbcluster.ops.init_ops import RandomNormal as random_normal
from nbcluster.ops.init_ops import RandomUniform as random_uniform
from nbcluster.ops.init_ops import TruncatedNormal as truncated_normal
from nbcluster.ops.init_ops import VarianceScaling
from nbcluster.ops.init_ops import VarianceScaling as variance_scaling
from nbcluster.ops.init_ops import Zeros as zeros
from nbcluster.ops.state import global_variables_initializer as global_variables
from nbcluster.ops.state import local_variables_initializer as local_variables
from nbcluster.ops.state import variables_initializer as variables


def he_normal(seed: Optional[int] = None) -> VarianceScaling:
    """Truncated normal with variance 2 / fan_in (He et al.)."""
    return VarianceScaling(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed: Optional[int] = None) -> VarianceScaling:
    """Uniform with variance 2 / fan_in."""
    return VarianceScaling(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed: Optional[int] = None) -> VarianceScaling:
    """Truncated normal with variance 1 / fan_in (LeCun)."""
    return VarianceScaling(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed: Optional[int] = None) -> VarianceScaling:
    """Uniform with variance 1 / fan_in."""
    return VarianceScaling(1.0, "fan_in", "uniform", seed)


__all__ = ["constant", "global_variables", "glorot_normal", "glorot_uniform", "he_normal",
           "he_uniform", "lecun_normal", "lecun_uniform", "local_variables", "ones",
           "random_normal", "random_uniform", "truncated_normal", "variables",
           "variance_scaling", "zeros"]
