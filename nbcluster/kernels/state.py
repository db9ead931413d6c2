"""Kernels for variables: they hand out and update a VariableResource."""
from __future__ import annotations

from nbcluster import errors
from nbcluster.kernels.registry import register_kernel
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


@register_kernel("IsVariableInitialized", "CPU", "GPU")
def _is_initialized(node, device):
    import numpy as np

    def is_initialized(ctx, ref):
        return (np.asarray(ref.initialized),)
    return is_initialized
