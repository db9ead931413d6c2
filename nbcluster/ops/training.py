"""Fused optimizer update ops (TF's training_ops): ApplyGradientDescent, ApplyMomentum,
ApplyAdagrad, ApplyAdam, and the sparse SparseApplyMomentum, SparseApplyAdagrad;
each with its ResourceApply* twin for resource variables (handles, no output).

Rule: each op takes its variable's reference (and its slots' references) as
ref inputs, so the placer puts it with the variable, and updates them in place;
the output is the variable's reference, as in TF. Input order and attr names
are TF's, so a GraphDef written by TF runs here. Dtypes and shapes are checked
when the graph is built: every float input shares the variable's dtype
(TypeError), hyperparameters are scalars and the gradient has the variable's
shape (ValueError); a sparse op's gradient has indices.shape + var.shape[1:]
and its indices are a vector.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor, as_tensor_or_op
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.ops.math import FLOATS, check_dtype, to_tensor
from nbcluster.ops.resource_variables import handle_op, handle_shape
from nbcluster.ops.shape_inference import shape_error

# op type -> (input names in TF's order, how many leading inputs are refs,
#             index of the gradient input, extra bool attrs and their defaults)
SIGNATURES = {
    "ApplyGradientDescent": (("var", "alpha", "delta"), 1, 2, {}),
    "ApplyMomentum": (("var", "accum", "lr", "grad", "momentum"), 2, 3,
                      {"use_nesterov": False}),
    "ApplyAdagrad": (("var", "accum", "lr", "grad"), 2, 3, {"update_slots": True}),
    "ApplyAdam": (("var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1", "beta2",
                   "epsilon", "grad"), 3, 9, {"use_nesterov": False}),
    "SparseApplyMomentum": (("var", "accum", "lr", "grad", "indices", "momentum"), 2, 3,
                            {"use_nesterov": False}),
    "SparseApplyAdagrad": (("var", "accum", "lr", "grad", "indices"), 2, 3,
                           {"update_slots": True}),
}
# Sparse ops: op type -> index of the indices input (attr Tindices).
SPARSE_INDICES = {"SparseApplyMomentum": 4, "SparseApplyAdagrad": 4}


def _shape_fn(op_type: str, resource: bool = False):
    names, n_refs, grad_index, _ = SIGNATURES[op_type]
    indices_index = SPARSE_INDICES.get(op_type)

    def shape_fn(op):
        facts = [_facts(op, t, resource and i < n_refs, name)
                 for i, (name, t) in enumerate(zip(names, op.inputs))]
        var_dtype, var_shape = facts[0]
        check_dtype(var_dtype, FLOATS, "var")
        for i, (name, (dtype, _), t) in enumerate(zip(names, facts, op.inputs)):
            if i == indices_index:
                _check_indices(op, t, var_shape)
            elif dtype != var_dtype:
                raise TypeError(f"Input '{name}' of '{op.type}' Op has type {dtype.name} "
                                f"that does not match type {var_dtype.name} of argument "
                                f"'var'.")
        for i, (name, (_, t_shape)) in enumerate(zip(names, facts)):
            if i == indices_index:
                continue
            if i == grad_index and indices_index is not None:
                _check_sparse_grad(op, t_shape, op.inputs[indices_index], var_shape)
            elif i < n_refs or i == grad_index:
                if not var_shape.is_compatible_with(t_shape):
                    raise shape_error(op, f"'{name}' has shape {t_shape}, but 'var' has "
                                          f"shape {var_shape}; they must match")
            elif t_shape.rank not in (None, 0):
                raise shape_error(op, f"'{name}' must be a scalar, but has shape {t_shape}")
        return [] if resource else [(var_dtype, var_shape)]
    return shape_fn


def _facts(op, t: Tensor, is_handle: bool, name: str) -> tuple:
    """(dtype, shape) of an input; of the variable behind it for a handle."""
    if not is_handle:
        return t.dtype, t.shape
    if t.dtype != dtypes.resource:
        raise TypeError(f"Input '{name}' of '{op.type}' Op has type {t.dtype.name} that "
                        f"does not match expected type of resource.")
    var = handle_op(t)
    return (var.get_attr("dtype") if var is not None else op.get_attr("T")), handle_shape(t)


def _check_indices(op, indices: Tensor, var_shape: TensorShape) -> None:
    check_dtype(indices.dtype, (dtypes.int32, dtypes.int64), "indices")
    if indices.shape.rank not in (None, 1):
        raise shape_error(op, f"'indices' must be a vector, but has shape {indices.shape}")
    if var_shape.rank == 0:
        raise shape_error(op, "'var' must be at least 1 dimensional, but is a scalar")


def _check_sparse_grad(op, grad_shape: TensorShape, indices: Tensor,
                       var_shape: TensorShape) -> None:
    if var_shape.rank is None or indices.shape.rank is None:
        return
    expected = TensorShape(indices.shape.dims + var_shape.dims[1:])
    if not grad_shape.is_compatible_with(expected):
        raise shape_error(op, f"'grad' has shape {grad_shape}, but indices.shape + "
                              f"var.shape[1:] is {expected}; they must match")


for _type, (_names, _refs, _, _) in SIGNATURES.items():
    register_op(_type, stateful=True, ref_inputs=tuple(range(_refs)),
                ref_outputs=(0,))(_shape_fn(_type))
    # TF's resource twin: handles instead of refs, no output.
    register_op("Resource" + _type, stateful=True,
                ref_inputs=tuple(range(_refs)))(_shape_fn(_type, resource=True))


def _ref(value, what: str) -> Tensor:
    """The reference tensor of a Variable, a resource variable's handle (or a
    ref or handle tensor as given)."""
    handle = getattr(value, "handle", None) if getattr(value, "_is_resource", False) else None
    ref = handle if handle is not None else as_tensor_or_op(value)
    if not isinstance(ref, Tensor):
        raise TypeError(f"'{what}' must be a tf.Variable or its reference tensor, got "
                        f"{value!r}")
    return ref


def apply_training_op(op_type: str, values: list, use_locking: bool = False,
                      name: Optional[str] = None, **attrs) -> Tensor:
    """Builds one fused update op, colocated with its variable; returns its output.

    Args:
      op_type: a key of SIGNATURES.
      values: the inputs in TF's order: the ref inputs (Variables or reference
        tensors) first, then tensors or Python numbers (converted to the
        variable's dtype).
      use_locking: hold the variables' locks for the whole update.
      name: the op's name (default: `op_type`).
      **attrs: the op's extra bool attrs (use_nesterov, update_slots).
    Returns: the updated variable's reference tensor; for resource variables
      (handles) the ResourceApply* op, which has no output.
    Raises:
      TypeError: a ref input is not a variable, or dtypes disagree.
      ValueError: shapes disagree, or an unknown attr is given.
    """
    names, n_refs, _, defaults = SIGNATURES[op_type]
    indices_index = SPARSE_INDICES.get(op_type)
    unknown = set(attrs) - set(defaults) - {"Tindices"}
    if unknown:
        raise ValueError(f"{op_type} has no attr named {sorted(unknown)}")
    refs = [_ref(v, n) for v, n in zip(values[:n_refs], names)]
    graph = graph_of(refs[0])
    dtype = refs[0].dtype
    if dtype == dtypes.resource:  # resource variables: TF's ResourceApply* twin
        op_type = "Resource" + op_type
        var = handle_op(refs[0])
        dtype = values[0].dtype if var is None else var.get_attr("dtype")
    with graph.as_default(), graph.colocate_with(refs[0].op):
        rest = [convert_to_tensor(v, name=n, graph=graph) if i == indices_index
                else to_tensor(v, dtype, n, graph)
                for i, (v, n) in enumerate(zip(values, names)) if i >= n_refs]
        if indices_index is not None:
            attrs = {**attrs, "Tindices": rest[indices_index - n_refs].dtype}
        full = {"T": dtype, "use_locking": bool(use_locking), **defaults,
                **{k: v if k == "Tindices" else bool(v) for k, v in attrs.items()}}
        op = graph.create_op(op_type, refs + rest, full, name=name or op_type)
        return op.outputs[0] if op.outputs else op


def apply_gradient_descent(var, alpha, delta, use_locking: bool = False,
                           name: Optional[str] = None) -> Tensor:
    """var -= alpha * delta (op ApplyGradientDescent)."""
    return apply_training_op("ApplyGradientDescent", [var, alpha, delta], use_locking, name)


def apply_momentum(var, accum, lr, grad, momentum, use_locking: bool = False,
                   name: Optional[str] = None, use_nesterov: bool = False) -> Tensor:
    """accum = accum * momentum + grad; var -= lr * accum, or with Nesterov
    var -= lr * grad + lr * momentum * accum (op ApplyMomentum)."""
    return apply_training_op("ApplyMomentum", [var, accum, lr, grad, momentum], use_locking,
                             name, use_nesterov=use_nesterov)


def apply_adagrad(var, accum, lr, grad, use_locking: bool = False, update_slots: bool = True,
                  name: Optional[str] = None) -> Tensor:
    """accum += grad ** 2; var -= lr * grad / sqrt(accum) (op ApplyAdagrad)."""
    return apply_training_op("ApplyAdagrad", [var, accum, lr, grad], use_locking, name,
                             update_slots=update_slots)


def apply_adam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
               use_locking: bool = False, use_nesterov: bool = False,
               name: Optional[str] = None) -> Tensor:
    """Adam's update with bias correction lr * sqrt(1 - beta2_power) / (1 - beta1_power)
    (op ApplyAdam)."""
    return apply_training_op("ApplyAdam", [var, m, v, beta1_power, beta2_power, lr, beta1,
                                           beta2, epsilon, grad], use_locking, name,
                             use_nesterov=use_nesterov)


def sparse_apply_momentum(var, accum, lr, grad, indices, momentum, use_locking: bool = False,
                          use_nesterov: bool = False, name: Optional[str] = None) -> Tensor:
    """For each i, row r = indices[i]: accum[r] = accum[r] * momentum + grad[i];
    var[r] -= lr * accum[r] (or Nesterov's form); rows in order, so a repeated
    index is applied twice (op SparseApplyMomentum)."""
    return apply_training_op("SparseApplyMomentum", [var, accum, lr, grad, indices, momentum],
                             use_locking, name, use_nesterov=use_nesterov)


def sparse_apply_adagrad(var, accum, lr, grad, indices, use_locking: bool = False,
                         update_slots: bool = True, name: Optional[str] = None) -> Tensor:
    """For each i, row r = indices[i]: accum[r] += grad[i] ** 2;
    var[r] -= lr * grad[i] / sqrt(accum[r]); rows in order (op SparseApplyAdagrad)."""
    return apply_training_op("SparseApplyAdagrad", [var, accum, lr, grad, indices],
                             use_locking, name, update_slots=update_slots)
