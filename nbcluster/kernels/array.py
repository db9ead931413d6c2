"""Array kernels: constants, placeholders, identity, joining, and the helpers other
kernel families use to read shape-like inputs and raise TF's messages.

Rule: a kernel never writes to its inputs (they may be read-only views of a
Const or of a feed); it returns new arrays or views of them. Shape-like inputs
(shape, perm, axis) are read on the host.
"""
from __future__ import annotations

import numpy as np

from nbcluster import errors
from nbcluster.framework import dtypes
from nbcluster.framework.tensor_shape import as_shape, list_str
from nbcluster.runtime.kernel_table import register_kernel

# TF's DataTypeString names, where they differ from ours (its messages use them).
_TF_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def tf_type_name(dtype) -> str:
    name = dtypes.as_dtype(dtype).name
    return _TF_TYPE_NAMES.get(name, name)


def shape_str(shape) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def invalid(message: str, node) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message, node_name=node.name)


def host_ints(device, value, node, what: str, vector: bool = True) -> list:
    """A small int tensor (shape, perm, axis) as Python ints, read on the host."""
    array = np.asarray(device.to_numpy(value))
    if vector and array.ndim != 1:
        raise invalid(f"{what} must be a vector, got shape {shape_str(array.shape)}", node)
    if not vector and array.size != 1:
        raise invalid(f"{what} must be a scalar, got shape {shape_str(array.shape)}", node)
    if array.dtype.kind in "iu":  # tolist gives Python ints, in C
        return array.ravel().tolist()
    return [int(v) for v in array.reshape(-1)]


def host_dims(device, value, node, what: str = "shape") -> list:
    """A shape input as non-negative dims; a negative one is InvalidArgument."""
    dims = host_ints(device, value, node, what)
    for d in dims:
        if d < 0:
            raise invalid(f"Dimension {d} must be >= 0 in {what} {shape_str(dims)}", node)
    return dims


def module_for(device, *arrays):
    """numpy for string (object) tensors, which stay on the host; else device.xp."""
    if any(getattr(a, "dtype", None) == object for a in arrays):
        return np
    return device.xp


# -- constants, placeholders, identity --------------------------------------
@register_kernel("Const", "CPU", "GPU")
def _const(node, device):
    value = device.from_numpy(node.attrs["value"])
    if isinstance(value, np.ndarray):
        value = value.view()  # the same array every step, so nobody may write it
        value.flags.writeable = False
    outputs = (value,)
    return lambda ctx: outputs


@register_kernel("Placeholder", "CPU", "GPU")
def _placeholder(node, device):
    # Runs only when the placeholder is not fed.
    shape = as_shape(node.attrs.get("shape"))
    message = (f"You must feed a value for placeholder tensor '{node.name}' with dtype "
               f"{tf_type_name(node.attrs['dtype'])}")
    if shape.rank:
        message += f" and shape {list_str(shape)}"

    def compute(ctx):
        raise invalid(message, node)
    return compute


@register_kernel("Identity", "CPU", "GPU")
@register_kernel("PlaceholderWithDefault", "CPU", "GPU")
def _identity(node, device):
    return lambda ctx, x: (x,)


# -- joining ----------------------------------------------------------------------
@register_kernel("ConcatV2", "CPU", "GPU")
def _concat(node, device):
    def compute(ctx, *inputs):
        values = inputs[:-1]
        (axis,) = host_ints(device, inputs[-1], node, "axis", vector=False)
        first = values[0]
        rank = first.ndim
        if rank == 0:
            raise invalid("ConcatOp : Can't concatenate scalars (use tf.stack instead)", node)
        if not -rank <= axis < rank:
            raise invalid(f"ConcatOp : Expected concatenating dimensions in the range "
                          f"[{-rank}, {rank}), but got {axis}", node)
        axis %= rank
        for i, v in enumerate(values[1:], 1):
            if v.ndim != rank:
                raise invalid(f"ConcatOp : Ranks of all input tensors should match: shape[0] "
                              f"= {shape_str(first.shape)} vs. shape[{i}] = "
                              f"{shape_str(v.shape)}", node)
            if any(a != b for j, (a, b) in enumerate(zip(first.shape, v.shape)) if j != axis):
                raise invalid(f"ConcatOp : Dimensions of inputs should match: shape[0] = "
                              f"{shape_str(first.shape)} vs. shape[{i}] = "
                              f"{shape_str(v.shape)}", node)
        return (module_for(device, *values).concatenate(values, axis=axis),)
    return compute


@register_kernel("Pack", "CPU", "GPU")
def _pack(node, device):
    axis = int(node.attrs.get("axis", 0))

    def compute(ctx, *values):
        first = values[0]
        for i, v in enumerate(values[1:], 1):
            if v.shape != first.shape:
                raise invalid(f"Shapes of all inputs must match: values[0].shape = "
                              f"{shape_str(first.shape)} != values[{i}].shape = "
                              f"{shape_str(v.shape)}", node)
        limit = first.ndim + 1
        if not -limit <= axis < limit:
            raise invalid(f"axis = {axis} not in [{-limit}, {limit})", node)
        return (module_for(device, *values).stack(values, axis=axis % limit),)
    return compute


# -- tiling and splitting ---------------------------------------------------------
@register_kernel("Tile", "CPU", "GPU")
def _tile(node, device):
    def compute(ctx, x, multiples):
        reps = host_ints(device, multiples, node, "multiples")
        if len(reps) != x.ndim:
            raise invalid(f"Expected multiples argument to be a vector of length {x.ndim} "
                          f"but got length {len(reps)}", node)
        for i, r in enumerate(reps):
            if r < 0:
                raise invalid(f"Expected multiples[{i}] >= 0, but got {r}", node)
        return (module_for(device, x).tile(x, reps) if x.ndim else x.copy(),)
    return compute


def _split_dim(device, node, axis, rank: int) -> int:
    (a,) = host_ints(device, axis, node, "split_dim", vector=False)
    if not -rank <= a < rank:
        raise invalid(f"-input rank(-{rank}) <= split_dim < input rank ({rank}), but got "
                      f"{a}", node)
    return a % rank


def _cut(xp, x, a: int, sizes: list) -> tuple:
    bounds = np.cumsum([0] + sizes)
    lead = (slice(None),) * a
    return tuple(x[lead + (slice(int(lo), int(hi)),)] for lo, hi in zip(bounds, bounds[1:]))


@register_kernel("Split", "CPU", "GPU")
def _split(node, device):
    n = int(node.attrs["num_split"])

    def compute(ctx, axis, x):
        a = _split_dim(device, node, axis, x.ndim)
        if x.shape[a] % n:
            raise invalid(f"Number of ways to split should evenly divide the split "
                          f"dimension, but got split_dim {a} (size = {x.shape[a]}) and "
                          f"num_split {n}", node)
        return _cut(module_for(device, x), x, a, [x.shape[a] // n] * n)
    return compute


@register_kernel("SplitV", "CPU", "GPU")
def _split_v(node, device):
    n = int(node.attrs["num_split"])

    def compute(ctx, x, size_splits, axis):
        a = _split_dim(device, node, axis, x.ndim)
        sizes = host_ints(device, size_splits, node, "size_splits")
        if len(sizes) != n:
            raise invalid(f"Number of ways to split should match size_splits: num_split "
                          f"{n} vs. {len(sizes)} sizes {shape_str(sizes)}", node)
        unknown = [i for i, s in enumerate(sizes) if s == -1]
        if len(unknown) > 1:
            raise invalid(f"Only one dimension can have a value of -1. Second one found at "
                          f"dimension {unknown[1]}", node)
        known = sum(s for s in sizes if s != -1)
        if unknown:
            sizes[unknown[0]] = x.shape[a] - known
        if any(s < 0 for s in sizes) or sum(sizes) != x.shape[a]:
            raise invalid(f"Determined shape must either match input shape along split_dim "
                          f"exactly if fully specified, or be less than the size of the "
                          f"input along split_dim if not fully specified.  Got: {known} "
                          f"(sizes {sizes}, input dimension {x.shape[a]})", node)
        return _cut(module_for(device, x), x, a, sizes)
    return compute
