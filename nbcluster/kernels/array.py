"""Array kernels: constants, placeholders, reshaping, joining, filling, shapes.

Rule: a kernel never writes to its inputs (they may be read-only views of a
Const or of a feed); it returns new arrays or views of them. Shape-like inputs
(shape, perm, axis) are read on the host.
"""
from __future__ import annotations

import numpy as np

from nbcluster import errors
from nbcluster.framework import dtypes
from nbcluster.framework.tensor_shape import as_shape, list_str
from nbcluster.kernels.registry import register_kernel

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


# -- reshaping ------------------------------------------------------------------
@register_kernel("Reshape", "CPU", "GPU")
def _reshape(node, device):
    def compute(ctx, x, shape):
        dims = host_ints(device, shape, node, "sizes input")
        return (x.reshape(_resolve(dims, int(x.size), node)),)
    return compute


def _resolve(dims: list, total: int, node) -> list:
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1:
        raise invalid(f"Only one input size may be -1, not both {unknown[0]} and "
                      f"{unknown[1]}", node)
    for i, d in enumerate(dims):
        if d < -1:
            raise invalid(f"Size {i} must be non-negative, not {d}", node)
    known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
    if unknown:
        if known == 0 or total % known:
            if known == 0 and total == 0:
                raise invalid("Reshape cannot infer the missing input size for an empty "
                              "tensor unless all specified input sizes are non-zero", node)
            raise invalid(f"Input to reshape is a tensor with {total} values, but the "
                          f"requested shape requires a multiple of {known}", node)
        dims = list(dims)
        dims[unknown[0]] = total // known
    elif known != total:
        raise invalid(f"Input to reshape is a tensor with {total} values, but the requested "
                      f"shape has {known}", node)
    return dims


@register_kernel("Transpose", "CPU", "GPU")
def _transpose(node, device):
    def compute(ctx, x, perm):
        perm = host_ints(device, perm, node, "perm")
        if len(perm) != x.ndim:
            raise invalid(f"transpose expects a vector of size {x.ndim}. But input(1) is a "
                          f"vector of size {len(perm)}", node)
        for p in perm:
            if not 0 <= p < x.ndim:
                raise invalid(f"perm dim {p} is out of range of input rank {x.ndim}", node)
        if sorted(perm) != list(range(x.ndim)):
            raise invalid(f"perm {shape_str(perm)} is not a permutation of [0, {x.ndim})", node)
        xp = module_for(device, x)
        return (xp.ascontiguousarray(xp.transpose(x, perm)),)
    return compute


@register_kernel("ExpandDims", "CPU", "GPU")
def _expand_dims(node, device):
    def compute(ctx, x, dim):
        (d,) = host_ints(device, dim, node, "'dim' input", vector=False)
        if d < -1 - x.ndim or d > x.ndim:
            raise invalid(f"Tried to expand dim index {d} for tensor with {x.ndim} "
                          f"dimensions.", node)
        d = d + x.ndim + 1 if d < 0 else d
        return (x.reshape(x.shape[:d] + (1,) + x.shape[d:]),)
    return compute


@register_kernel("Squeeze", "CPU", "GPU")
def _squeeze(node, device):
    axes = [int(a) for a in node.attrs.get("squeeze_dims", [])]

    def compute(ctx, x):
        for a in axes:
            if not -x.ndim <= a < x.ndim:
                raise invalid(f"Tried to squeeze dim index {a} for tensor with {x.ndim} "
                              f"dimensions.", node)
        wanted = {a % x.ndim for a in axes}
        for i in wanted:
            if x.shape[i] != 1:
                raise invalid(f"Can not squeeze dim[{i}], expected a dimension of 1, got "
                              f"{x.shape[i]}", node)
        keep = [d for i, d in enumerate(x.shape)
                if (i not in wanted if wanted else d != 1)]
        return (x.reshape(keep),)
    return compute


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


# -- filling ------------------------------------------------------------------------
@register_kernel("Fill", "CPU", "GPU")
def _fill(node, device):
    def compute(ctx, dims, value):
        dims = host_dims(device, dims, node, "dims")
        if value.ndim != 0:
            raise invalid(f"value must be a scalar, got shape {shape_str(value.shape)}", node)
        out = module_for(device, value).empty(dims, dtype=value.dtype)
        out[...] = value
        return (out,)
    return compute


def _like(fill_value, string_value):
    def factory(node, device):
        def compute(ctx, x):
            if x.dtype == object:
                out = np.empty(x.shape, dtype=object)
                out[...] = string_value
                return (out,)
            return (device.xp.full(x.shape, fill_value, dtype=x.dtype),)
        return compute
    return factory


register_kernel("ZerosLike", "CPU", "GPU")(_like(0, b""))
register_kernel("OnesLike", "CPU", "GPU")(_like(1, b"1"))


# -- shapes -----------------------------------------------------------------------
def _shape_kernel(measure):
    def factory(node, device):
        out_type = dtypes.as_dtype(node.attrs.get("out_type", dtypes.int32)).as_numpy_dtype

        def compute(ctx, x):
            return (device.from_numpy(np.array(measure(x), dtype=out_type)),)
        return compute
    return factory


register_kernel("Shape", "CPU", "GPU")(_shape_kernel(lambda x: x.shape))
register_kernel("Size", "CPU", "GPU")(_shape_kernel(lambda x: x.size))
register_kernel("Rank", "CPU", "GPU")(_shape_kernel(lambda x: x.ndim))
