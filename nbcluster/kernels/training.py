"""Kernels of the fused optimizer updates (numpy on CPU, cupy on GPU).

Rule: as Assign and AssignSub do, an update replaces each VariableResource's
array with a new one and never writes into the old, since a fetch or a Send
may still hold it. With use_locking the variable's (and its slots') locks are
held from the first read to the last write, so concurrent updates serialize;
without it, racing updates may overwrite each other, as in TF.
"""
from __future__ import annotations

import contextlib

from nbcluster import errors
from nbcluster.kernels.math import quiet
from nbcluster.kernels.registry import register_kernel

DEVICES = ("CPU", "GPU")


def _gradient_descent(xp, attrs, var, alpha, delta):
    return (var - alpha * delta,)


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


def _factory(op_type: str):
    rule, n_refs, grad_index = _RULES[op_type]

    def factory(node, device):
        xp = device.xp
        attrs = dict(node.attrs)
        use_locking = bool(attrs.get("use_locking", False))

        def compute(ctx, *inputs):
            refs, rest = list(inputs[:n_refs]), list(inputs[n_refs:])
            with _locked(refs, use_locking):
                current = [ref.read() for ref in refs]
                grad = inputs[grad_index]
                for name, value in zip(("var", "accum" if n_refs == 2 else "m", "v"),
                                       current):
                    if tuple(value.shape) != tuple(grad.shape):
                        raise errors.InvalidArgumentError(
                            None, None, f"{name} and grad do not have the same shape"
                                        f"{list(value.shape)} {list(grad.shape)}",
                            node_name=node.name)
                dtype = current[0].dtype
                new = rule(xp, attrs, *current, *rest)
                for ref, value in zip(refs, new):
                    ref.write(xp.asarray(value, dtype=dtype))
            return (refs[0],)

        return quiet(xp, compute)

    return factory


for _type in _RULES:
    register_kernel(_type, *DEVICES)(_factory(_type))
