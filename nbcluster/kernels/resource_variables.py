"""Kernels of the resource variable ops: a handle's value is the task's
VariableResource itself, so reads and writes are those of ref variables.

Rule: VarHandleOp finds (or makes, uninitialized) the variable by container
and shared_name, as VariableV2 does, so its value follows the same snapshot
rules (kernels/state.py, `VariableResource.sole_array`); writes return nothing,
as TF's. Errors are TF's: reading a variable not yet assigned is
FailedPreconditionError naming it; a value of another dtype, or of another
shape than the variable's, is InvalidArgumentError.
"""
from __future__ import annotations

import numpy as np

from nbcluster import errors
from nbcluster.kernels.indexing import first_out_of_range, position_str, scatter_add
from nbcluster.kernels.state import _count_up_to, _updater, scattered
from nbcluster.runtime.kernel_table import register_kernel
from nbcluster.runtime.resources import VariableResource

DEVICES = ("CPU", "GPU")


def no_outputs(factory):
    """A ref op's kernel factory as its resource twin's: the same update, no output."""
    def wrapped(node, device):
        kernel = factory(node, device)

        def run(ctx, *inputs):
            kernel(ctx, *inputs)
            return ()
        return run
    return wrapped


@register_kernel("VarHandleOp", *DEVICES)
def _var_handle(node, device):
    container = node.attrs.get("container") or None
    name = node.attrs.get("shared_name") or node.name
    dtype, shape = node.attrs["dtype"], node.attrs["shape"]

    def var_handle(ctx):
        return (ctx.resources.lookup_or_create(
            container or ctx.default_container, name,
            lambda: VariableResource(name, dtype, shape), VariableResource),)
    return var_handle


def read(node, ref):
    """The variable's value; FailedPreconditionError naming it if it has none."""
    if not ref.initialized:
        raise errors.FailedPreconditionError(
            None, None, f"Error while reading resource variable {ref.name}. This could mean "
                        f"that the variable was uninitialized. Not found: Resource "
                        f"{ref.name} does not exist.", node_name=node.name)
    return ref.read()


def _check_dtype(node, ref, value) -> None:
    wanted = ref.dtype.as_numpy_dtype
    if wanted is not object and np.dtype(value.dtype) != np.dtype(wanted):
        raise errors.InvalidArgumentError(
            None, None, f"Trying to assign variable with wrong dtype. Expected "
                        f"{ref.dtype.name} got {np.dtype(value.dtype).name}",
            node_name=node.name)


@register_kernel("ReadVariableOp", *DEVICES)
def _read_variable(node, device):
    def read_variable(ctx, ref):
        return (read(node, ref),)
    return read_variable


@register_kernel("AssignVariableOp", *DEVICES)
def _assign_variable(node, device):
    xp = device.xp

    def assign_variable(ctx, ref, value):
        _check_dtype(node, ref, value)
        shape = ref.shape
        if shape.is_fully_defined() and tuple(value.shape) != tuple(shape.as_list()):
            raise errors.InvalidArgumentError(
                None, None, f"Trying to assign to variable with tensor with wrong shape. "
                            f"Expected {shape.as_list()} got {list(value.shape)}",
                node_name=node.name)
        ref.write(xp.array(value, copy=True) if ref.dtype.as_numpy_dtype is not object
                  else value)
        return ()
    return assign_variable


def _checked_update(sign: int):
    update = no_outputs(_updater(sign))

    def factory(node, device):
        kernel = update(node, device)

        def run(ctx, ref, delta):
            read(node, ref)
            _check_dtype(node, ref, delta)
            return kernel(ctx, ref, delta)
        return run
    return factory


register_kernel("AssignAddVariableOp", *DEVICES)(_checked_update(+1))
register_kernel("AssignSubVariableOp", *DEVICES)(_checked_update(-1))


@register_kernel("ResourceCountUpTo", *DEVICES)
def _resource_count_up_to(node, device):
    count = _count_up_to(node, device)

    def count_up_to(ctx, ref):
        read(node, ref)
        return count(ctx, ref)
    return count_up_to


@register_kernel("VarIsInitializedOp", *DEVICES)
def _is_initialized(node, device):
    return lambda ctx, ref: (np.asarray(ref.initialized),)


@register_kernel("DestroyResourceOp", *DEVICES)
def _destroy(node, device):
    ignore = bool(node.attrs.get("ignore_lookup_error", True))

    def destroy(ctx, ref):
        if not ctx.resources.delete(ref) and not ignore:
            raise errors.NotFoundError(None, None, f"Resource {ref.name} does not exist.",
                                       node_name=node.name)
        return ()
    return destroy


@register_kernel("VariableShape", *DEVICES)
def _variable_shape(node, device):
    out = node.attrs.get("out_type").as_numpy_dtype

    def variable_shape(ctx, ref):
        return (np.asarray(read(node, ref).shape, dtype=out),)
    return variable_shape


def _checked_rows(node, device, xp, indices, rows: int) -> None:
    bad = first_out_of_range(device, xp, indices, rows)
    if bad is not None:
        raise errors.InvalidArgumentError(
            None, None, f"{position_str('indices', bad[0])} = {bad[1]} is not in [0, {rows})",
            node_name=node.name)


@register_kernel("ResourceGather", *DEVICES)
def _gather(node, device):
    xp = device.xp

    def gather(ctx, ref, indices):
        value = read(node, ref)
        if value.ndim == 0:
            raise errors.InvalidArgumentError(
                None, None, "params must be at least 1 dimensional", node_name=node.name)
        _checked_rows(node, device, xp, indices, value.shape[0])
        return (xp.take(value, indices, axis=0),)
    return gather


def _ufunc_at(name: str):
    def apply(xp, target, indices, values) -> None:
        if name == "add":
            scatter_add(xp, target, indices, values)
        elif name == "subtract":
            scatter_add(xp, target, indices, -values)
        elif name == "divide" and target.dtype.kind in "iu":
            # TF's integer division truncates toward zero; rows in order.
            for i, row in enumerate(indices.reshape(-1).tolist()):
                row_values = values.reshape((-1,) + target.shape[1:])[i]
                target[row] = np.trunc(target[row] / row_values).astype(target.dtype)
        else:
            getattr(np, name).at(target, indices, values)
    return apply


# op type -> how rows of the variable's copy take the updates (repeated rows in
# order), and the device types it runs on (numpy's ufunc.at has no cupy twin)
_SCATTER = {
    "ResourceScatterUpdate": (None, DEVICES),
    "ResourceScatterAdd": (_ufunc_at("add"), DEVICES),
    "ResourceScatterSub": (_ufunc_at("subtract"), DEVICES),
    "ResourceScatterMul": (_ufunc_at("multiply"), ("CPU",)),
    "ResourceScatterDiv": (_ufunc_at("divide"), ("CPU",)),
    "ResourceScatterMin": (_ufunc_at("minimum"), ("CPU",)),
    "ResourceScatterMax": (_ufunc_at("maximum"), ("CPU",)),
}


def _scatter(op_type: str):
    apply = _SCATTER[op_type][0]

    def factory(node, device):
        def scatter(ctx, ref, indices, updates):
            with ref.lock:
                current = read(node, ref)
                _check_dtype(node, ref, updates)
                ref.write(scattered(node, device, current, indices, updates, apply))
            return ()
        return scatter
    return factory


for _type, (_, _devices) in _SCATTER.items():
    register_kernel(_type, *_devices)(_scatter(_type))
