"""The op table: each op type's signature facts and its shape function.

Rule: one entry per op type, added by `@register_op`, duplicates refused.
Kernels (per device type) live in a separate table in `nbcluster.kernels`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from nbcluster import errors

ShapeFn = Callable[["object"], list]  # Operation -> [(DType, TensorShape), ...]


@dataclass(frozen=True)
class OpDef:
    """What the graph builder and the placer need to know of an op type.

    ref_inputs: inputs that take a variable reference (Assign's first input);
      a node with such an input is placed with the producer of that input.
    ref_outputs: outputs that are references (a Variable's value).
    stateful: the op owns or touches state, so it is never deduplicated and
      runs where its resource lives.
    """

    type: str
    shape_fn: ShapeFn
    stateful: bool = False
    ref_inputs: frozenset = frozenset()
    ref_outputs: frozenset = frozenset()
    blocking: bool = False


_OPS: dict[str, OpDef] = {}


def register_op(op_type: str, *, stateful: bool = False, ref_inputs=(), ref_outputs=(),
                blocking: bool = False):
    """Decorator registering `shape_fn` as op `op_type`'s shape function."""

    def wrap(shape_fn: ShapeFn) -> ShapeFn:
        if op_type in _OPS:
            raise KeyError(f"Op type {op_type!r} is already registered")
        _OPS[op_type] = OpDef(op_type, shape_fn, stateful, frozenset(ref_inputs),
                              frozenset(ref_outputs), blocking)
        return shape_fn

    return wrap


def get_op_def(op_type: str) -> OpDef:
    try:
        return _OPS[op_type]
    except KeyError:
        raise errors.NotFoundError(None, None, f"Op type not registered '{op_type}'") from None


def registered_ops() -> dict[str, OpDef]:
    return dict(_OPS)
