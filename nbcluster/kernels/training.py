"""Kernels of the fused optimizer updates, dense and sparse (numpy on CPU, cupy on GPU).

Rule: an update writes into a VariableResource's array only while nothing
else holds it (`VariableResource.sole_array`: no fetch, Send or step input);
otherwise, as Assign and AssignSub do, it replaces the array with a new one,
since a fetch or a Send may still hold the old. With use_locking the
variable's (and its slots') locks are held from the first read to the last
write, so concurrent updates serialize; without it, racing updates may
overwrite each other, as in TF. A sparse
update visits its indices in order, one row at a time, as TF's kernels do:
a repeated index is updated twice, the second time from the first's result.
"""
from __future__ import annotations

import contextlib

import numpy as np

from nbcluster import errors
from nbcluster.kernels.array import shape_str
from nbcluster.kernels.resource_variables import no_outputs
from nbcluster.runtime import blas_axpy
from nbcluster.runtime.kernel_table import register_kernel

DEVICES = ("CPU", "GPU")


def _gradient_descent(xp, attrs, var, alpha, delta):
    return (var - alpha * delta,)


def _gradient_descent_in_place(scratch, var, alpha, delta) -> None:
    if np.ndim(alpha) == 0 and blas_axpy.axpy(-alpha, delta, var):
        return
    # No temporary: a fresh 800 KB block per step is a fresh mmap's page faults.
    np.multiply(delta, alpha, out=scratch)
    np.subtract(var, scratch, out=var)


# op type -> its rule writing into the variable's own array (numpy only)
_IN_PLACE = {"ApplyGradientDescent": _gradient_descent_in_place}


def _momentum(xp, attrs, var, accum, lr, grad, momentum):
    accum = accum * momentum + grad
    if attrs.get("use_nesterov", False):
        return var - (grad * lr + accum * momentum * lr), accum
    return var - lr * accum, accum


def _adagrad(xp, attrs, var, accum, lr, grad):
    if attrs.get("update_slots", True):
        accum = accum + grad * grad
    return var - lr * grad / xp.sqrt(accum), accum


def _adam(xp, attrs, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
    alpha = lr * xp.sqrt(1 - beta2_power) / (1 - beta1_power)
    m = m + (grad - m) * (1 - beta1)
    v = v + (grad * grad - v) * (1 - beta2)
    step = m * beta1 + (1 - beta1) * grad if attrs.get("use_nesterov", False) else m
    return var - alpha * step / (xp.sqrt(v) + epsilon), m, v


# op type -> (update rule, number of ref inputs, index of the gradient)
_RULES = {
    "ApplyGradientDescent": (_gradient_descent, 1, 2),
    "ApplyMomentum": (_momentum, 2, 3),
    "ApplyAdagrad": (_adagrad, 2, 3),
    "ApplyAdam": (_adam, 3, 9),
}


def _locked(refs: list, use_locking: bool):
    if not use_locking:
        return contextlib.nullcontext()
    stack = contextlib.ExitStack()
    # One order for every kernel, so two updates sharing refs cannot deadlock.
    for ref in sorted(refs, key=id):
        stack.enter_context(ref.lock)
    return stack


def _checked_dtype(node, refs: list, grad):
    """The variable's dtype, once every ref's shape is the gradient's."""
    for name, ref in zip(("var", "accum" if len(refs) == 2 else "m", "v"), refs):
        shape = tuple(ref.read().shape)
        if shape != tuple(grad.shape):
            raise _shape_error(node, name, shape, grad)
    return refs[0].read().dtype


def _shape_error(node, name: str, shape: tuple, grad) -> errors.InvalidArgumentError:
    # TF names the gradient input as the op does (ApplyGradientDescent's is delta).
    what = "delta" if node.op.endswith("ApplyGradientDescent") else "grad"
    return errors.InvalidArgumentError(
        None, None, f"{name} and {what} do not have the same shape"
                    f"{shape_str(shape)} {shape_str(grad.shape)}", node_name=node.name)


def _updated_in_place(node, update, scratch: dict, ref, rest: tuple, grad, dtype) -> bool:
    """Runs `update` in `ref`'s own array if nothing else holds it; whether it did.

    `scratch` is the kernel's: one work array per shape, reused every step
    (the variable's lock, held meanwhile, serializes the node's updates).
    `dtype` is the variable's, or None when not read yet: the shapes are
    checked here then, on the array itself.
    """
    with ref.sole_array() as var:
        if var is None:
            return False
        if dtype is None:
            if var.shape != tuple(grad.shape):
                raise _shape_error(node, "var", var.shape, grad)
            dtype = var.dtype
        for r in rest:
            if getattr(r, "dtype", dtype) != dtype:
                return False  # a promotion would change the result's dtype: replace instead
        work = scratch.get(var.shape)
        if work is None or work.dtype != var.dtype:
            work = scratch[var.shape] = np.empty_like(var)
        update(work, var, *rest)
        return True


def _factory(op_type: str):
    rule, n_refs, grad_index = _RULES[op_type]

    def factory(node, device):
        xp = device.xp
        attrs = dict(node.attrs)
        use_locking = bool(attrs.get("use_locking", False))
        in_place = _IN_PLACE.get(op_type) if xp is np else None
        scratch: dict = {}

        def update(inputs):
            refs, rest = inputs[:n_refs], inputs[n_refs:]
            grad = inputs[grad_index]
            # One ref and no lock: the in-place path reads and checks the array itself.
            dtype = None if n_refs == 1 and not use_locking else \
                _checked_dtype(node, list(refs), grad)
            if in_place is not None and _updated_in_place(node, in_place, scratch, refs[0],
                                                          rest, grad, dtype):
                return (refs[0],)
            if dtype is None:
                dtype = _checked_dtype(node, list(refs), grad)
            current = [ref.read() for ref in refs]
            new = rule(xp, attrs, *current, *rest)
            for ref, value in zip(refs, new):
                ref.write(xp.asarray(value, dtype=dtype))
            return (refs[0],)

        if not use_locking:
            return lambda ctx, *inputs: update(inputs)

        def compute(ctx, *inputs):
            with _locked(list(inputs[:n_refs]), True):
                return update(inputs)

        return compute

    return factory


for _type in _RULES:
    register_kernel(_type, *DEVICES)(_factory(_type))


def _sparse_momentum(xp, attrs, var_row, accum_row, lr, grad_row, momentum):
    accum_row = accum_row * momentum + grad_row
    if attrs.get("use_nesterov", False):
        return var_row - (grad_row * lr + accum_row * momentum * lr), accum_row
    return var_row - lr * accum_row, accum_row


def _sparse_adagrad(xp, attrs, var_row, accum_row, lr, grad_row):
    if attrs.get("update_slots", True):
        accum_row = accum_row + grad_row * grad_row
    return var_row - lr * grad_row / xp.sqrt(accum_row), accum_row


# op type -> the update of one row (SparseApplyMomentum's momentum comes after indices)
_SPARSE_RULES = {
    "SparseApplyMomentum": _sparse_momentum,
    "SparseApplyAdagrad": _sparse_adagrad,
}


def _sparse_factory(op_type: str):
    rule = _SPARSE_RULES[op_type]

    def factory(node, device):
        xp = device.xp
        attrs = dict(node.attrs)
        use_locking = bool(attrs.get("use_locking", False))

        def compute(ctx, var_ref, accum_ref, lr, grad, indices, *momentum):
            with _locked([var_ref, accum_ref], use_locking):
                var, accum = var_ref.read(), accum_ref.read()
                _check_sparse(node, var, accum, grad, indices)
                var, accum = var.copy(), accum.copy()  # the old arrays may be fetched
                for i, row in enumerate(indices.tolist()):
                    var[row], accum[row] = rule(xp, attrs, var[row], accum[row], lr,
                                                grad[i], *momentum)
                var_ref.write(var)
                accum_ref.write(accum)
            return (var_ref,)

        return compute

    return factory


def _check_sparse(node, var, accum, grad, indices) -> None:
    if tuple(var.shape) != tuple(accum.shape):
        raise errors.InvalidArgumentError(
            None, None, f"var and accum do not have the same shape{list(var.shape)} "
                        f"{list(accum.shape)}", node_name=node.name)
    if tuple(grad.shape) != (len(indices),) + tuple(var.shape[1:]):
        raise errors.InvalidArgumentError(
            None, None, f"grad must be indices.shape + var.shape[1:]: grad "
                        f"{list(grad.shape)}, indices {list(indices.shape)}, var "
                        f"{list(var.shape)}", node_name=node.name)
    rows = var.shape[0]
    for i, index in enumerate(indices.tolist()):
        if not 0 <= index < rows:
            raise errors.InvalidArgumentError(
                None, None, f"Index {index} at offset {i} in indices is out of range",
                node_name=node.name)


for _type in _SPARSE_RULES:
    register_kernel(_type, *DEVICES)(_sparse_factory(_type))


# ResourceApply*: a handle's value is the VariableResource a ref op gets
# (kernels/resource_variables.py), so the same update serves, with no output.
for _type in _RULES:
    register_kernel("Resource" + _type, *DEVICES)(no_outputs(_factory(_type)))
for _type in _SPARSE_RULES:
    register_kernel("Resource" + _type, *DEVICES)(no_outputs(_sparse_factory(_type)))
