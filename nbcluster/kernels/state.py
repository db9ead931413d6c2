"""Kernels for variables: they hand out and update a VariableResource (whole, or
rows of it: the scatter updates)."""
from __future__ import annotations

from nbcluster import errors
from nbcluster.kernels.indexing import first_out_of_range, position_str, scatter_add
from nbcluster.runtime.kernel_table import register_kernel
from nbcluster.runtime.resources import VariableResource


@register_kernel("VariableV2", "CPU", "GPU")
def _variable(node, device):
    container = node.attrs.get("container") or None
    name = node.attrs.get("shared_name") or node.name
    dtype, shape = node.attrs["dtype"], node.attrs["shape"]

    def variable(ctx):
        return (ctx.resources.lookup_or_create(
            container or ctx.default_container, name,
            lambda: VariableResource(node.name, dtype, shape), VariableResource),)
    return variable


@register_kernel("Assign", "CPU", "GPU")
def _assign(node, device):
    xp = device.xp
    validate = node.attrs.get("validate_shape", True)

    def assign(ctx, ref, value):
        shape = ref.shape
        if validate and shape.is_fully_defined() and tuple(value.shape) != tuple(shape.as_list()):
            raise errors.InvalidArgumentError(
                None, None, f"Assign requires shapes of both tensors to match. lhs shape= "
                            f"{shape.as_list()} rhs shape= {list(value.shape)}",
                node_name=node.name)
        ref.write(xp.array(value, dtype=ref.dtype.as_numpy_dtype, copy=True)
                  if ref.dtype.as_numpy_dtype is not object else value)
        return (ref,)
    return assign


def _updater(sign: int):
    def factory(node, device):
        def update(ctx, ref, delta):
            with ref.lock:
                current = ref.read()
                if current.shape != delta.shape and delta.size != 1:
                    raise errors.InvalidArgumentError(
                        None, None, f"{node.op} requires shapes of both tensors to match. "
                                    f"lhs shape= {list(current.shape)} rhs shape= "
                                    f"{list(delta.shape)}", node_name=node.name)
                ref.write((current + delta if sign > 0 else current - delta)
                          .astype(current.dtype, copy=False))
            return (ref,)
        return update
    return factory


register_kernel("AssignAdd", "CPU", "GPU")(_updater(+1))
register_kernel("AssignSub", "CPU", "GPU")(_updater(-1))


@register_kernel("CountUpTo", "CPU", "GPU")
def _count_up_to(node, device):
    limit = int(node.attrs["limit"])

    def count_up_to(ctx, ref):
        with ref.lock:
            before = ref.read()
            if int(before) >= limit:
                raise errors.OutOfRangeError(None, None, f"Reached limit of {limit}",
                                             node_name=node.name)
            ref.write((before + 1).astype(before.dtype, copy=False))
        return (before,)
    return count_up_to


@register_kernel("IsVariableInitialized", "CPU", "GPU")
def _is_initialized(node, device):
    import numpy as np

    def is_initialized(ctx, ref):
        return (np.asarray(ref.initialized),)
    return is_initialized


def _scatter(op_type: str):
    def factory(node, device):
        xp = device.xp

        def scatter(ctx, ref, indices, updates):
            with ref.lock:
                current = ref.read()
                rows = current.shape[0] if current.ndim else 0
                bad = first_out_of_range(device, xp, indices, rows)
                if bad is not None:
                    raise errors.InvalidArgumentError(
                        None, None, f"{position_str('indices', bad[0])} = {bad[1]} is not in "
                                    f"[0, {rows})", node_name=node.name)
                target = tuple(indices.shape) + tuple(current.shape[1:])
                if updates.ndim and tuple(updates.shape) != target:
                    raise errors.InvalidArgumentError(
                        None, None, f"Must have updates.shape = indices.shape + "
                                    f"params.shape[1:] or updates.shape = [], got "
                                    f"updates.shape {list(updates.shape)}, indices.shape "
                                    f"{list(indices.shape)}, params.shape "
                                    f"{list(current.shape)}", node_name=node.name)
                values = xp.broadcast_to(updates, target)
                new = current.copy()  # the old array may still be a fetched snapshot
                if op_type == "ScatterUpdate":
                    new[indices] = values
                else:
                    scatter_add(xp, new, indices, values if op_type == "ScatterAdd"
                                else -values)
                ref.write(new)
            return (ref,)
        return scatter
    return factory


for _type in ("ScatterUpdate", "ScatterAdd", "ScatterSub"):
    register_kernel(_type, "CPU", "GPU")(_scatter(_type))
