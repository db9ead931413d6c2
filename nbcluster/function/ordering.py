"""Automatic control dependencies: a function's stateful ops run in program order.

Rule (TF2's, for the ops of one copy of a trace, taken in the order the
trace made them): an op that reads a piece of state waits for the last op
that wrote it; an op that writes it waits for that write and for every read
since; stateful ops that touch no state (random ops) wait for one another.
State is a variable or a resource handle (a queue, an accumulator); a
stateful op using it writes it, any other op using it reads it.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.op_registry import get_op_def
from nbcluster.framework.operation import Operation

_NO_STATE = None  # the key under which stateful ops with no state input are chained


def is_state(op: Operation) -> bool:
    """Ops that create state (a variable, a queue): every copy shares them."""
    op_def = get_op_def(op.type)
    return op_def.stateful and not op.inputs and op.type != "Placeholder" and \
        (bool(op_def.ref_outputs) or all(t.dtype == dtypes.resource for t in op.outputs))


def state_read(op: Operation) -> Optional[Operation]:
    """The state op a plain read `op` (an Identity of a variable, e.g. the
    snapshot a Variable converts to, or a resource variable's ReadVariableOp)
    reads, else None."""
    if op.type in ("Identity", "ReadVariableOp") and op.inputs and is_state(op.inputs[0].op):
        return op.inputs[0].op
    return None


class StatefulOrder:
    """What each op of a copy must wait for, in the order the copy is built."""

    def __init__(self) -> None:
        self._last_write: dict = {}  # id(state op) or _NO_STATE -> copied op
        self._reads: dict = {}       # id(state op) -> copied reads since that write

    def controls(self, op: Operation) -> tuple:
        """(control inputs, accesses) for the copy of trace op `op`, whose
        inputs are what the copy will use (`accesses` goes to `record`)."""
        stateful = get_op_def(op.type).stateful
        states = {id(t.op) for t in op.inputs if is_state(t.op)}
        if stateful and not states and not is_state(op):
            states = {_NO_STATE}
        controls = []
        for key in states:
            if key in self._last_write:
                controls.append(self._last_write[key])
            if stateful:
                controls.extend(self._reads.get(key, ()))
        return controls, (states, stateful)

    def record(self, new: Operation, accesses: tuple) -> None:
        """`new` (a copied op) made the accesses `controls` returned."""
        states, stateful = accesses
        for key in states:
            if stateful:
                self._last_write[key] = new
                self._reads[key] = []
            else:
                self._reads.setdefault(key, []).append(new)

    def written_since(self, key: int, read: Operation) -> bool:
        """Whether state `key` was written after the copied read `read`."""
        return read not in self._reads.get(key, ())
