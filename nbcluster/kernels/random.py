"""Random kernels: each node owns a generator seeded from its seed/seed2 attrs.

Rule: samples are drawn on the host with numpy and then moved to the device,
so a seeded graph gives the same numbers on CPU and GPU, locally and
distributed. seed == seed2 == 0 means "unseeded": fresh entropy per kernel.
"""
from __future__ import annotations

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.kernels.array import host_dims, host_ints, invalid
from nbcluster.runtime.kernel_table import register_kernel

_U64 = 2 ** 64


def generator(node) -> np.random.Generator:
    seed, seed2 = int(node.attrs.get("seed", 0)), int(node.attrs.get("seed2", 0))
    if seed == 0 and seed2 == 0:
        return np.random.default_rng()
    return np.random.default_rng([seed % _U64, seed2 % _U64])


def _float_sampler(draw):
    """A kernel factory for a float op; `draw(rng, dims, np_dtype)` samples float32/64."""
    def factory(node, device):
        rng = generator(node)
        dtype = dtypes.as_dtype(node.attrs["dtype"]).as_numpy_dtype
        work = np.float32 if dtype == np.float16 else dtype

        def compute(ctx, shape):
            sample = draw(rng, host_dims(device, shape, node), work)
            return (device.from_numpy(_narrow(sample, dtype, draw is _uniform)),)
        return compute
    return factory


def _narrow(sample: np.ndarray, dtype, below_one: bool) -> np.ndarray:
    if sample.dtype == dtype:
        return sample
    out = sample.astype(dtype)
    if below_one:  # rounding to half precision may reach 1.0; keep [0, 1)
        np.minimum(out, np.nextafter(dtype(1), dtype(0)), out=out)
    return out


def _normal(rng, dims, dtype) -> np.ndarray:
    return rng.standard_normal(dims, dtype=dtype)


def _uniform(rng, dims, dtype) -> np.ndarray:
    return rng.random(dims, dtype=dtype)


def _truncated(rng, dims, dtype) -> np.ndarray:
    out = rng.standard_normal(dims, dtype=dtype)
    bad = np.abs(out) > 2
    while bad.any():
        out[bad] = rng.standard_normal(int(bad.sum()), dtype=dtype)
        bad = np.abs(out) > 2
    return out


register_kernel("RandomStandardNormal", "CPU", "GPU")(_float_sampler(_normal))
register_kernel("RandomUniform", "CPU", "GPU")(_float_sampler(_uniform))
register_kernel("TruncatedNormal", "CPU", "GPU")(_float_sampler(_truncated))


@register_kernel("RandomUniformInt", "CPU", "GPU")
def _uniform_int(node, device):
    rng = generator(node)
    dtype = dtypes.as_dtype(node.attrs["Tout"]).as_numpy_dtype

    def compute(ctx, shape, minval, maxval):
        dims = host_dims(device, shape, node)
        (lo,) = host_ints(device, minval, node, "minval", vector=False)
        (hi,) = host_ints(device, maxval, node, "maxval", vector=False)
        if lo >= hi:
            raise invalid(f"Need minval < maxval, got {lo} >= {hi}", node)
        return (device.from_numpy(rng.integers(lo, hi, size=dims, dtype=dtype)),)
    return compute


@register_kernel("RandomShuffle", "CPU", "GPU")
def _shuffle(node, device):
    rng = generator(node)

    def compute(ctx, value):
        if value.ndim == 0 or value.shape[0] <= 1:
            return (value,)
        order = device.from_numpy(rng.permutation(value.shape[0]))
        return (value[order],)
    return compute
