"""Gradients of the control-flow primitives in a cond: a Switch's is the Merge
of its outputs' gradients, a Merge's the Switch of its gradient on the cond's
predicate. The loop primitives are differentiated as one unit per loop
(`control_flow_while.py`), never one by one.
"""
from __future__ import annotations

from nbcluster.grad.gradient_table import NotDifferentiable, register_gradient
from nbcluster.grad.resource_variables import zeros_like_value
from nbcluster.ops.control_flow import merge, switch

for _type in ("LoopCond", "ControlTrigger", "Assert"):
    NotDifferentiable(_type)


def _switch_grad(op, grad_false, grad_true):
    if grad_false is None and grad_true is None:
        return [None, None]
    # The untaken side's gradient is dead; a missing one becomes zeros on that
    # side (dead with it), so the Merge always has exactly one live input.
    # (For a switched variable handle: zeros of the variable, read on that side.)
    if grad_false is None:
        grad_false = zeros_like_value(op.outputs[0])
    if grad_true is None:
        grad_true = zeros_like_value(op.outputs[1])
    return [merge([grad_false, grad_true])[0], None]


def _merge_grad(op, grad, _index_grad=None):
    pred = getattr(op, "_cond_pred", None)
    if pred is None or len(op.inputs) != 2:
        raise LookupError(f"No gradient for Merge '{op.name}': only a tf.cond's Merge (built "
                          f"in this graph, with its predicate known) is differentiable")
    if grad is None:
        return [None, None]
    false_grad, true_grad = switch(grad, pred)
    return [false_grad, true_grad]


def _loop_op_grad(op, *grads):
    raise LookupError(f"No gradient for '{op.name}' ({op.type}) outside its tf.while_loop: "
                      f"loops are differentiated as a whole, from a loop built by "
                      f"tf.while_loop in this graph")


for _prefix in ("", "Ref"):
    register_gradient(_prefix + "Switch")(_switch_grad)
    register_gradient(_prefix + "Merge")(_merge_grad)
    for _type in ("Enter", "Exit", "NextIteration"):
        register_gradient(_prefix + _type)(_loop_op_grad)
