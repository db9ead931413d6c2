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

    # What the last step found: (resources, their generation, container, outputs).
    found: list = [(None, -1, None, None)]

    def variable(ctx):
        mgr, where = ctx.resources, container or ctx.default_container
        last_mgr, generation, last_where, outputs = found[0]
        if last_mgr is mgr and generation == mgr.generation and last_where == where:
            return outputs
        generation = mgr.generation  # read first: a clear meanwhile makes it stale
        outputs = (mgr.lookup_or_create(where, name,
                                        lambda: VariableResource(node.name, dtype, shape),
                                        VariableResource),)
        found[0] = (mgr, generation, where, outputs)
        return outputs
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


def scattered(node, device, current, indices, updates, apply):
    """A copy of `current` whose rows `indices` took `updates` (the old array may
    still be a fetched snapshot), as TF's ref and resource scatter kernels do.

    Args:
      apply: `apply(xp, new, indices, values)` updates the copy's rows in place
        (repeated rows in order); None assigns them.
    Raises:
      InvalidArgumentError: an index is out of range, or `updates` is neither
        scalar nor of shape indices.shape + current.shape[1:].
    """
    xp = device.xp
    rows = current.shape[0] if current.ndim else 0
    bad = first_out_of_range(device, xp, indices, rows)
    if bad is not None:
        raise errors.InvalidArgumentError(
            None, None, f"{position_str('indices', bad[0])} = {bad[1]} is not in [0, {rows})",
            node_name=node.name)
    target = tuple(indices.shape) + tuple(current.shape[1:])
    if updates.ndim and tuple(updates.shape) != target:
        raise errors.InvalidArgumentError(
            None, None, f"Must have updates.shape = indices.shape + params.shape[1:] or "
                        f"updates.shape = [], got updates.shape {list(updates.shape)}, "
                        f"indices.shape {list(indices.shape)}, params.shape "
                        f"{list(current.shape)}", node_name=node.name)
    values = xp.broadcast_to(updates, target)
    new = current.copy()
    if apply is None:
        new[indices] = values
    else:
        apply(xp, new, indices, values)
    return new


def _subtract_rows(xp, target, indices, values) -> None:
    scatter_add(xp, target, indices, -values)


_REF_SCATTER = {"ScatterUpdate": None, "ScatterAdd": scatter_add, "ScatterSub": _subtract_rows}


def _scatter(op_type: str):
    apply = _REF_SCATTER[op_type]

    def factory(node, device):
        def scatter(ctx, ref, indices, updates):
            with ref.lock:
                ref.write(scattered(node, device, ref.read(), indices, updates, apply))
            return (ref,)
        return scatter
    return factory


for _type in ("ScatterUpdate", "ScatterAdd", "ScatterSub"):
    register_kernel(_type, "CPU", "GPU")(_scatter(_type))
