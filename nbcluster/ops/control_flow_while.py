"""tf.while_loop (TF1's, from Enter, Merge, Switch, LoopCond, NextIteration, Exit).

Rule: per loop variable, Enter -> Merge -> Switch(LoopCond) -> Identity (the
body's input) -> body -> NextIteration -> back into the Merge; the Switch's
false side is the Exit. Values the condition or the body read from outside
enter the frame once, as constant Enters (`control_flow_context.capture`).
A `WhileContext` records the loop; gradients treat it as one unit
(`grad/control_flow_while.py`).
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.constant import constant as constant_op
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph
from nbcluster.framework.operation import Operation, Tensor, as_tensor_or_op
from nbcluster.framework.tensor_shape import TensorShape, as_shape
from nbcluster.ops.array import identity
from nbcluster.ops.control_flow import (
    enter,
    exit,
    loop_cond,
    merge,
    next_iteration,
    replace_input,
    switch,
)
from nbcluster.ops.control_flow_context import (
    assert_same_structure,
    building,
    capture,
    flatten,
    pack_as,
)


class WhileContext:
    """One tf.while_loop: its frame, its ops, and what the loop needs from outside.

    As a gradient unit it quacks like an op: `inputs` (the loop variables'
    initial values, then the captured outside tensors), `outputs` (the Exits).
    """

    type = "WhileContext"  # no op type: grad/control_flow_while.py differentiates it

    def __init__(self, graph, frame_name: str, cond, body, structure, parallel: int,
                 back_prop: bool, shape_invariants: list) -> None:
        self.graph = graph
        self.name = frame_name
        self.frame_name = frame_name
        self.cond_fn, self.body_fn = cond, body
        self.structure = structure
        self.parallel_iterations = parallel
        self.back_prop = back_prop
        self.shape_invariants = shape_invariants
        self.outer: Optional[WhileContext] = None
        self.initial: list = []
        self.captured: dict = {}       # id(outer tensor) -> (outer tensor, Enter output)
        self.merges: list = []
        self.body_inputs: list = []    # Identity(Switch:1) per loop variable
        self.loop_cond: Optional[Tensor] = None
        self.exits: list = []
        self.ops: list = []
        self.body_ops: list = []       # the ops one call of the body made, in order
        self.grad_state = None         # built by the first gradient through the loop

    @property
    def inputs(self) -> list:
        return list(self.initial) + [t for t, _ in self.captured.values()]

    @property
    def outputs(self) -> list:
        return list(self.exits)

    @property
    def pivot(self) -> Operation:
        return self.body_inputs[0].op

    def _tag(self, *values) -> None:
        for v in values:
            op = v.op if isinstance(v, Tensor) else v
            if getattr(op, "_while_context", None) is None:
                op._while_context = self
            self.ops.append(op)


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations: int = 10,
               back_prop: bool = True, swap_memory: bool = False, name: Optional[str] = None,
               maximum_iterations=None, return_same_structure: bool = False):
    """Repeats `body` while `cond` holds, as one graph value (TF1's tf.while_loop).

    Args:
      cond: callable taking the loop variables, returning a scalar bool tensor.
      body: callable taking the loop variables, returning new values of the
        same structure, dtypes and (unless `shape_invariants` says otherwise)
        shapes.
      loop_vars: a (nested) list, tuple, namedtuple or dict of Tensors,
        TensorArrays or values convertible to Tensors.
      shape_invariants: the same structure of TensorShapes a variable may take.
      parallel_iterations: how many iterations may run at once.
      back_prop: whether gradients may flow through the loop.
      swap_memory: accepted for TF's signature (no device memory to swap).
      maximum_iterations: stop after this many iterations at most.
    Returns: the loop variables' final values (a single one bare unless
      `return_same_structure`).
    Raises:
      TypeError: cond or body is not callable; a body output's dtype differs.
      ValueError: no loop variables, a structure mismatch, or a shape that
        changes without a shape invariant allowing it (naming the tensor).
    """
    if not callable(cond):
        raise TypeError("cond must be callable.")
    if not callable(body):
        raise TypeError("body must be callable.")
    if parallel_iterations < 1:
        raise TypeError("parallel_iterations must be a positive integer.")
    del swap_memory
    graph = get_default_graph()
    with graph.name_scope(name or "while") as scope:
        if maximum_iterations is not None:
            limit = convert_to_tensor(maximum_iterations, name="maximum_iterations", graph=graph)
            if limit.shape.rank not in (None, 0):
                raise ValueError(f"maximum_iterations must be a scalar, saw shape: "
                                 f"{limit.shape}")
            counter = convert_to_tensor(0, dtype=limit.dtype, name="iteration_counter",
                                        graph=graph)
            inner_cond, inner_body = cond, body

            def cond(i, lv):  # noqa: F811 - wraps the user's
                from nbcluster.ops.logic import logical_and
                from nbcluster.ops.math import less
                return logical_and(less(i, limit), _call(inner_cond, lv))

            def body(i, lv):  # noqa: F811
                out = _call(inner_body, lv)
                if isinstance(lv, (list, tuple)) and len(lv) == 1 and \
                        not isinstance(out, (list, tuple)):
                    out = [out]
                return (i + 1, out)
            loop_vars = (counter, loop_vars)
            if shape_invariants is not None:
                shape_invariants = (TensorShape([]), shape_invariants)
            result = _build(graph, scope, cond, body, loop_vars, shape_invariants,
                            parallel_iterations, back_prop)[1]
        else:
            result = _build(graph, scope, cond, body, loop_vars, shape_invariants,
                            parallel_iterations, back_prop)
    if not return_same_structure:
        leaves = flatten(result)
        if len(leaves) == 1 and isinstance(loop_vars if maximum_iterations is None
                                           else loop_vars[1], (list, tuple)):
            return leaves[0]
    return result


def _call(fn, loop_vars):
    if isinstance(loop_vars, (list, tuple)) and not hasattr(loop_vars, "_fields"):
        return fn(*loop_vars)
    return fn(loop_vars)


def _build(graph, scope: str, cond, body, loop_vars, shape_invariants, parallel: int,
           back_prop: bool):
    from nbcluster.ops.control_flow_tensor_array import TensorArray

    structure = loop_vars
    leaves = flatten(loop_vars)
    if not leaves:
        raise ValueError("No loop variables provided")
    arrays = [leaf if isinstance(leaf, TensorArray) else None for leaf in leaves]
    values = [leaf.flow if isinstance(leaf, TensorArray)
              else convert_to_tensor(as_tensor_or_op(leaf), graph=graph) for leaf in leaves]
    if shape_invariants is not None:
        try:
            assert_same_structure(structure, shape_invariants)
        except (ValueError, TypeError):
            invariants = flatten(shape_invariants)
            if len(invariants) != len(values):
                raise
        invariants = [as_shape(s) for s in flatten(shape_invariants)]
    else:
        invariants = [v.shape for v in values]
    for v, inv, ta in zip(values, invariants, arrays):
        if ta is None and not inv.is_compatible_with(v.shape):
            raise ValueError(f"The shape invariant specified for {v.name} is not compatible "
                             f"with the initial shape of the loop variable. It enters the "
                             f"loop with shape {v.shape}, but the specified shape invariant "
                             f"is {inv}.")
    frame_name = scope + "while_context"
    ctx = WhileContext(graph, frame_name, cond, body, structure, parallel, back_prop,
                       invariants)
    ctx.outer = building.stack[-1] if building.stack else None
    ctx.initial = values
    ctx.arrays = arrays
    enters = [enter(v, frame_name, False, parallel, name="Enter") for v in values]
    merges = []
    for e, inv in zip(enters, invariants):
        e._shape = inv
        m = merge([e, e], name="Merge")[0]
        m._shape = inv
        merges.append(m)
    ctx.merges = merges
    ctx._tag(*enters, *merges)

    def repack(tensors):
        return pack_as(structure, [t if ta is None else ta._with_flow(t)
                                   for t, ta in zip(tensors, arrays)])

    def value_of(t: Tensor) -> Tensor:
        if id(t) not in ctx.captured:
            inner = enter(t, frame_name, True, parallel, name="Enter")
            ctx._tag(inner)
            ctx.captured[id(t)] = (t, inner)
        return ctx.captured[id(t)][1]

    gates: dict = {}

    def gate_of(op: Operation) -> Operation:
        if id(op) not in gates:
            with graph.control_dependencies(None), graph.colocate_with(op):
                with graph.control_dependencies([op]):
                    after = constant_op(0, name="control_gate")
                gates[id(op)] = enter(after, frame_name, True, parallel, name="Enter").op
            ctx._tag(gates[id(op)])
        return gates[id(op)]

    building.stack.append(ctx)
    try:
        start = graph.version
        pred = _call(cond, repack(merges))
        pred = convert_to_tensor(as_tensor_or_op(pred), dtype=dtypes.bool, graph=graph)
        if pred.shape.rank not in (None, 0):
            raise ValueError(f"Shape must be rank 0 but is rank {pred.shape.rank} for the "
                             f"loop condition {pred.name}")
        if pred.op._id < start:
            pred = identity(pred)
        capture(graph, start, value_of, merges[0].op, ctx, internal=[m.op for m in merges],
                gate_of=gate_of)
        ctx.loop_cond = loop_cond(pred, name="LoopCond")
        switches = [switch(m, ctx.loop_cond, name="Switch") for m in merges]
        body_in = [identity(sw[1], name="Identity") for sw in switches]
        ctx.body_inputs = body_in
        ctx._tag(ctx.loop_cond, *[sw[0] for sw in switches], *body_in)
        start = graph.version
        result = _call(body, repack(body_in))
        ctx.body_ops = graph.operations_since(start)  # what its gradient rebuilds, in order
        seq = isinstance(structure, (list, tuple)) and not hasattr(structure, "_fields")
        if seq and len(structure) == 1 and not isinstance(result, (list, tuple)):
            result = [result]
        try:
            assert_same_structure(list(structure) if seq else structure,
                                  list(result) if seq and isinstance(result, (list, tuple))
                                  and not hasattr(result, "_fields") else result)
        except (ValueError, TypeError) as e:
            raise type(e)(f"The body of while loop {frame_name} returned a structure "
                          f"unlike its loop_vars: {e}") from None
        outs = []
        for v, out, inv in zip(values, flatten(result), invariants):
            out = as_tensor_or_op(out)
            if isinstance(out, TensorArray):
                out = out.flow
            elif not isinstance(out, Tensor):
                out = convert_to_tensor(out, dtype=v.dtype, graph=graph)
            if out.dtype != v.dtype:
                raise TypeError(f"Loop variable {v.name} enters the loop as {v.dtype.name} "
                                f"but the body returns {out.dtype.name} ({out.name})")
            if not inv.is_compatible_with(out.shape):
                raise ValueError(
                    f"Input tensor '{v.name}' enters the loop with shape {inv}, but has "
                    f"shape {out.shape} after one iteration. To allow the shape to vary "
                    f"across iterations, use the `shape_invariants` argument of "
                    f"tf.while_loop to specify a less-specific shape.")
            if out.op._id < start:  # an input or outside value handed straight back
                out = identity(out)
            outs.append(out)
        capture(graph, start, value_of, ctx.pivot, ctx,
                internal=[t.op for t in body_in] + [m.op for m in merges], gate_of=gate_of)
    finally:
        building.stack.pop()
    for m, out in zip(merges, outs):
        with graph.colocate_with(m.op):
            nxt = next_iteration(out, name="NextIteration")
        replace_input(m.op, 1, nxt)
        ctx._tag(nxt)
    ctx.exits = [exit(sw[0], name="Exit") for sw in switches]
    for x, inv in zip(ctx.exits, invariants):
        x._shape = inv
    ctx._tag(*ctx.exits)
    for x in ctx.exits:
        x.op._while_exit = ctx
    return repack(ctx.exits)


def loop_unit(op):
    """What gradients walk for `op`: the outermost while loop holding it that is
    not being built now (a gradient inside a loop body treats the body's own
    ops one by one), else `op` itself."""
    ctx = getattr(op, "_while_context", None)
    if ctx is None:
        return op
    current = building.stack[-1] if building.stack else None
    unit = None
    while ctx is not None and ctx is not current:
        unit = ctx
        ctx = ctx.outer
    return unit if unit is not None else op
