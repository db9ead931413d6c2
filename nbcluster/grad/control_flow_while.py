"""The gradient of a tf.while_loop, as one unit: a gradient loop that runs the
forward loop's iterations backwards.

Rule (TF1's stack approach, with recomputation): the forward loop gets, per
gradient, a counter and one StackPushV2 per loop variable in its frame (new
ops only, so a graph already sent to a session just grows): each iteration
pushes the values the body started from, in order (every push waits for the
previous iteration's counter). The gradient loop runs that many iterations;
each pops the values of one forward iteration, newest first, builds the body
again on them (`WhileContext.body_fn`) and takes `tf.gradients` of it with
the incoming gradients as grad_ys. Gradients of outside tensors the body
reads (weights) are summed over the iterations in extra loop variables. Only
what that gradient needs of the rebuilt body runs; a body with side effects
(assignments, random ops) is rebuilt, but its ops run only if the gradient
needs them.
"""
from __future__ import annotations

from nbcluster.framework import dtypes
from nbcluster.framework.constant import constant
from nbcluster.grad.gradient_table import register_unit_gradient
from nbcluster.grad.gradients import gradients, stops_in_effect
from nbcluster.grad.resource_variables import zeros_like_value
from nbcluster.ops.array import identity
from nbcluster.ops.control_flow import (
    add_control_input,
    enter,
    exit,
    merge,
    next_iteration,
    replace_input,
    switch,
)
from nbcluster.ops.control_flow_context import flatten, pack_as
from nbcluster.ops.control_flow_tensor_array import (
    TensorArray,
    stack_pop_v2,
    stack_push_v2,
    stack_v2,
)
from nbcluster.ops.control_flow_while import while_loop
from nbcluster.ops.fill import zeros_like
from nbcluster.ops.resource_variables import handle_op

_FLOATS = {dtypes.float16, dtypes.float32, dtypes.float64}


@register_unit_gradient("WhileContext")
def while_gradient(ctx, *out_grads) -> list:
    """The gradients of a WhileContext's inputs (initial values, then captured
    tensors) from its Exits' gradients `out_grads` (None where none flows)."""
    inputs = ctx.inputs
    if not ctx.back_prop or all(g is None for g in out_grads):
        return [None] * len(inputs)
    graph = ctx.graph
    count, stacks = _accumulate(ctx)
    n_vars = len(ctx.initial)
    float_vars = [k for k in range(n_vars) if ctx.initial[k].dtype in _FLOATS]
    captured = [t for t, _ in ctx.captured.values()]
    # A captured resource variable's handle gets its variable's gradient too.
    float_caps = [c for c in captured if c.dtype in _FLOATS or
                  (c.dtype == dtypes.resource and handle_op(c) is not None)]
    init_grads = [out_grads[k] if out_grads[k] is not None else zeros_like(ctx.exits[k])
                  for k in float_vars]
    init_accs = [zeros_like_value(c) for c in float_caps]
    arrays = ctx.arrays

    def cond(j, grads, accs):
        return j < count

    def body(j, grads, accs):
        popped = [stack_pop_v2(s, v.dtype, shape=ctx.shape_invariants[k])
                  for k, (s, v) in enumerate(zip(stacks, ctx.initial))]
        with graph.control_dependencies([p.op for p in popped]):
            j_next = j + 1
        leaves = [p if ta is None else ta._with_flow(p) for p, ta in zip(popped, arrays)]
        before = graph.version
        result = ctx.body_fn(*pack_as(ctx.structure, leaves)) \
            if isinstance(ctx.structure, (list, tuple)) and not hasattr(ctx.structure, "_fields") \
            else ctx.body_fn(pack_as(ctx.structure, leaves))
        if isinstance(ctx.structure, (list, tuple)) and len(ctx.structure) == 1 and \
                not isinstance(result, (list, tuple)):
            result = [result]
        outs = [o.flow if isinstance(o, TensorArray) else o for o in flatten(result)]
        ys = [outs[k] for k in float_vars]
        xs = [popped[k] for k in float_vars] + float_caps
        stops = _rebuilt(ctx, graph.operations_since(before), stops_in_effect())
        dxs = gradients(ys, xs, grad_ys=list(grads), stop_gradients=stops) if ys \
            else [None] * len(xs)
        new_grads = [g if g is not None else zeros_like(popped[k])
                     for g, k in zip(dxs[:len(float_vars)], float_vars)]
        new_accs = [a + g if g is not None else identity(a)
                    for a, g in zip(accs, dxs[len(float_vars):])]
        return j_next, new_grads, new_accs

    _, grads, accs = while_loop(cond, body, [constant(0, name="grad_counter"), init_grads,
                                             init_accs],
                                parallel_iterations=ctx.parallel_iterations,
                                name="grad_loop", return_same_structure=True)
    by_var = dict(zip(float_vars, grads))
    by_cap = {id(c): a for c, a in zip(float_caps, accs)}
    return [by_var.get(k) for k in range(n_vars)] + [by_cap.get(id(c)) for c in captured]


def _rebuilt(ctx, made: list, stops: tuple) -> list:
    """The tensors of the body rebuilt as `made` standing for the stop tensors that
    lie in the forward body: the n-th op a call of the body makes is the same op
    each time (a body that builds differently per call is refused, naming it)."""
    at = {op: i for i, op in enumerate(ctx.body_ops)}
    inside = [t for t in stops if t.op in at]
    if not inside:
        return []
    if len(made) != len(ctx.body_ops) or any(
            m.type != f.type for m, f in zip(made, ctx.body_ops)):
        raise ValueError(f"stop_gradients names {inside[0].name}, in the body of while loop "
                         f"{ctx.frame_name}, but that body builds different ops on each call, "
                         f"so its gradient cannot find the same tensor")
    return [made[at[t.op]].outputs[t.value_index] for t in inside]


def _accumulate(ctx) -> tuple:
    """Adds a counter and per-variable pushes to the forward loop; returns (the
    count of iterations, after the loop; the stacks)."""
    graph, frame = ctx.graph, ctx.frame_name
    with graph.name_scope("forward_accumulators"):
        stacks = []
        for v in ctx.body_inputs:
            with graph.colocate_with(v.op):
                stacks.append(stack_v2(-1, v.dtype, stack_name=v.op.name))
        zero = constant(0, name="iterations_start")
        c_enter = enter(zero, frame, False, ctx.parallel_iterations)
        c_merge = merge([c_enter, c_enter])[0]
        c_false, c_true = switch(c_merge, ctx.loop_cond)
        c_body = identity(c_true)
        with graph.control_dependencies([c_body.op]):
            one = constant(1)
        pushes = []
        for s, v in zip(stacks, ctx.body_inputs):
            handle = enter(s, frame, True, ctx.parallel_iterations)
            with graph.control_dependencies([c_body.op]):
                pushes.append(stack_push_v2(handle, v))
            ctx._tag(handle)
        c_add = c_body + one
        for p in pushes:
            add_control_input(c_add.op, p.op)
        c_next = next_iteration(c_add)
        replace_input(c_merge.op, 1, c_next)
        count = exit(c_false)
        ctx._tag(c_enter, c_merge, c_false, c_body, one, c_add, c_next, count, *pushes)
    return count, stacks
