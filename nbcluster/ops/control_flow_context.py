"""What a branch or a loop body is made of: the ops its Python function built,
and how they read values from outside (TF's CondContext / WhileContext rules).

Rule: the function runs first, building ordinary ops; then `capture` rewires
the ops it built. Every input from outside goes through one Switch (a branch)
or Enter (a body) per outside tensor, and an op that reads nothing from inside
waits for the pivot, so an untaken branch, or a body's last iteration, runs
none of it: side effects included. Nested constructs compose: an inner
branch's Switch reads an outer tensor, which the outer capture then rewires.
Also here: nested structures as TF's `nest` walks them (dicts by sorted key).
"""
from __future__ import annotations

import threading
from typing import Callable

from nbcluster.framework.operation import Operation, Tensor
from nbcluster.ops.control_flow import add_control_input, replace_input


def capture(graph, start: int, value_of: Callable[[Tensor], Tensor], pivot: Operation,
            context=None, internal=(), gate_of: Callable = None) -> dict:
    """Rewires the ops built since op index `start`; returns {outer tensor: inner}.

    `internal`: ops built before `start` that are inside too (a loop's Merges,
    read by its condition). `context` (a while loop's) is recorded on each op
    that has none yet, for gradients (`control_flow_while.loop_unit`).
    `gate_of(op)` (a loop's): what replaces a control input from outside, which
    would be in another frame (a constant Enter of a value made after it).
    """
    ops = graph.operations_since(start)
    inside = {id(op) for op in ops} | {id(op) for op in internal}
    inner: dict = {}
    for op in ops:
        if context is not None:
            outer = getattr(op, "_while_context", None)
            if outer is None:
                op._while_context = context
            elif outer is not context and outer.outer is None:
                outer.outer = context
        reads_inside = False
        for index, t in enumerate(op.inputs):
            if id(t.op) in inside:
                reads_inside = True
                continue
            if id(t) not in inner:
                inner[id(t)] = (t, value_of(t))
            replace_input(op, index, inner[id(t)][1])
        if gate_of is not None:
            for k, c in enumerate(op._control_inputs):
                if id(c) not in inside:
                    op._control_inputs[k] = gate_of(c)
        if not reads_inside and not any(id(c) in inside for c in op.control_inputs):
            add_control_input(op, pivot)
    return {id(t): v for t, v in inner.values()}


def external(graph, start: int, t: Tensor) -> bool:
    """Whether `t` was built before op index `start` (outside the function's ops)."""
    return t.op._id < start


# -- nested structures (TF's nest: lists, tuples, namedtuples, dicts) ------------
def flatten(structure) -> list:
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in flatten(structure[key])]
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def pack_as(structure, leaves: list):
    it = iter(leaves)

    def pack(s):
        if isinstance(s, dict):
            return type(s)((k, pack(s[k])) for k in sorted(s))
        if isinstance(s, tuple) and hasattr(s, "_fields"):
            return type(s)(*(pack(v) for v in s))
        if isinstance(s, (list, tuple)):
            return type(s)(pack(v) for v in s)
        return next(it)
    return pack(structure)


def assert_same_structure(a, b) -> None:
    """Raises ValueError (nesting or lengths differ) or TypeError (sequence types
    differ), as TF's nest.assert_same_structure does."""
    def kind(s):
        if isinstance(s, dict):
            return "dict"
        if isinstance(s, (list, tuple)):
            return type(s)
        return None

    def walk(x, y):
        kx, ky = kind(x), kind(y)
        if (kx is None) != (ky is None):
            raise ValueError(f"The two structures don't have the same nested structure.\n\n"
                             f"First structure: {a}\n\nSecond structure: {b}")
        if kx is None:
            return
        if kx != ky:
            raise TypeError(f"The two structures don't have the same sequence type. Input "
                            f"structure has type {kx}, while shallow structure has type {ky}.")
        if kx == "dict":
            if sorted(x) != sorted(y):
                raise ValueError(f"The two dictionaries don't have the same set of keys. "
                                 f"First structure has keys {sorted(x)}, while second "
                                 f"structure has keys {sorted(y)}.")
            for key in sorted(x):
                walk(x[key], y[key])
            return
        if len(x) != len(y):
            raise ValueError(f"The two structures don't have the same nested structure.\n\n"
                             f"First structure: {a}\n\nSecond structure: {b}\n\nMore "
                             f"specifically: Substructure \"{x}\" has length {len(x)}, while "
                             f"substructure \"{y}\" has length {len(y)}")
        for u, v in zip(x, y):
            walk(u, v)
    walk(a, b)


class _Building(threading.local):
    def __init__(self) -> None:
        self.stack: list = []  # while contexts whose body is being built, innermost last


building = _Building()
