"""Variable initializers (TF1's `tf.zeros_initializer()` & co.): objects called with a shape.

Each initializer is a small object whose call `init(shape, dtype=None,
partition_info=None)` builds the ops of an initial value; `get_variable`
calls it inside the variable's "Initializer" name scope. The fan-based ones
(Glorot, variance scaling) read fans from the shape as TF does: the last two
dimensions are (fan_in, fan_out), any leading ones multiply both.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.framework.constant import constant
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.ops.fill import ones, zeros
from nbcluster.ops.random import random_normal, random_uniform, truncated_normal

_MODES = ("fan_in", "fan_out", "fan_avg")
_DISTRIBUTIONS = ("uniform", "truncated_normal", "untruncated_normal", "normal")


def _full_shape(shape) -> list:
    dims = TensorShape(shape)
    if not dims.is_fully_defined():
        raise ValueError(f"An initializer needs a fully defined shape, not {dims}")
    return dims.as_list()


class Initializer:
    """The base: `dtype` is the default for calls that give none."""

    def __init__(self, dtype=dtypes.float32) -> None:
        self.dtype = dtypes.as_dtype(dtype)

    def _dtype(self, dtype):
        return dtypes.as_dtype(dtype) if dtype is not None else self.dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        raise NotImplementedError

    def get_config(self) -> dict:
        return {"dtype": self.dtype.name}


class Zeros(Initializer):
    def __call__(self, shape, dtype=None, partition_info=None):
        return zeros(_full_shape(shape), self._dtype(dtype))


class Ones(Initializer):
    def __call__(self, shape, dtype=None, partition_info=None):
        return ones(_full_shape(shape), self._dtype(dtype))


class Constant(Initializer):
    """`value` (a scalar, or a list/array with the shape's number of elements)."""

    def __init__(self, value=0, dtype=dtypes.float32, verify_shape: bool = False) -> None:
        super().__init__(dtype)
        self.value, self.verify_shape = value, verify_shape

    def __call__(self, shape, dtype=None, partition_info=None):
        dims = _full_shape(shape)
        dtype = self._dtype(dtype)
        value = np.asarray(self.value, dtype=dtype.as_numpy_dtype)
        if value.ndim == 0:
            return constant(np.full(dims, value), dtype=dtype)
        if self.verify_shape and list(value.shape) != dims:
            raise TypeError(f"Expected Tensor's shape: {tuple(dims)}, got {value.shape}.")
        if value.size != int(np.prod(dims)):
            raise ValueError(f"The constant {self.value!r} has {value.size} elements; the "
                             f"variable's shape {dims} needs {int(np.prod(dims))}")
        return constant(value.reshape(dims), dtype=dtype)

    def get_config(self) -> dict:
        return {"value": self.value, "dtype": self.dtype.name,
                "verify_shape": self.verify_shape}


class RandomUniform(Initializer):
    def __init__(self, minval=0.0, maxval=None, seed: Optional[int] = None,
                 dtype=dtypes.float32) -> None:
        super().__init__(dtype)
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_uniform(_full_shape(shape), self.minval, self.maxval, self._dtype(dtype),
                              seed=self.seed)


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=1.0, seed: Optional[int] = None,
                 dtype=dtypes.float32) -> None:
        super().__init__(dtype)
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_normal(_full_shape(shape), self.mean, self.stddev, self._dtype(dtype),
                             seed=self.seed)


class TruncatedNormal(RandomNormal):
    def __call__(self, shape, dtype=None, partition_info=None):
        return truncated_normal(_full_shape(shape), self.mean, self.stddev, self._dtype(dtype),
                                seed=self.seed)


def fans(shape: list) -> tuple:
    """(fan_in, fan_out) of a weight of `shape`, as TF computes them."""
    if not shape:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


class VarianceScaling(Initializer):
    """Samples with variance `scale / n`, n the fan `mode` picks.

    Raises:
      ValueError: scale <= 0, or an unknown mode or distribution (naming it).
    """

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal", seed: Optional[int] = None,
                 dtype=dtypes.float32) -> None:
        super().__init__(dtype)
        if scale <= 0.0:
            raise ValueError(f"`scale` must be a positive float, not {scale!r}")
        if mode not in _MODES:
            raise ValueError(f"Invalid `mode` argument {mode!r}: use one of {_MODES}")
        if distribution not in _DISTRIBUTIONS:
            raise ValueError(f"Invalid `distribution` argument {distribution!r}: use one of "
                             f"{_DISTRIBUTIONS}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        dims = _full_shape(shape)
        dtype = self._dtype(dtype)
        # a shard of a partitioned variable scales by the whole variable's fans, as in TF
        whole = getattr(partition_info, "full_shape", None)
        fan_in, fan_out = fans(list(whole) if whole is not None else dims)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        variance = self.scale / max(1.0, n)
        if self.distribution in ("truncated_normal", "normal"):
            # The stddev of a unit normal truncated at two stddevs.
            stddev = math.sqrt(variance) / 0.87962566103423978
            return truncated_normal(dims, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_normal(dims, 0.0, math.sqrt(variance), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * variance)
        return random_uniform(dims, -limit, limit, dtype, seed=self.seed)

    def get_config(self) -> dict:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, "dtype": self.dtype.name}


class GlorotUniform(VarianceScaling):
    def __init__(self, seed: Optional[int] = None, dtype=dtypes.float32) -> None:
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)


class GlorotNormal(VarianceScaling):
    def __init__(self, seed: Optional[int] = None, dtype=dtypes.float32) -> None:
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)


def as_initializer(value, dtype) -> Optional[Initializer]:
    """An initializer class given where an instance is meant (TF1 code writes both)."""
    if isinstance(value, type) and issubclass(value, Initializer):
        return value(dtype=dtype) if dtype is not None else value()
    return value
