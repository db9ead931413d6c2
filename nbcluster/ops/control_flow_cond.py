"""tf.cond (TF1's, from Switch and Merge) and tf.case (nested conds).

Rule: `pred` is switched on itself to make one pivot per branch; each branch's
ops read outside values through Switch(value, pred) (`control_flow_context.
capture`) and each output pair meets in a Merge, so only the taken branch
runs and the Merge forwards its value.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph
from nbcluster.framework.operation import Operation, Tensor, as_tensor_or_op
from nbcluster.ops.array import identity, stack
from nbcluster.ops.control import with_dependencies
from nbcluster.ops.control_flow import Assert, merge, switch
from nbcluster.ops.control_flow_context import assert_same_structure, capture, flatten, pack_as
from nbcluster.ops.math import cast, less_equal
from nbcluster.ops.reduction import reduce_sum


def cond(pred, true_fn=None, false_fn=None, strict: bool = False, name: Optional[str] = None,
         fn1=None, fn2=None):
    """`true_fn()` if `pred` else `false_fn()`, as one graph value; only the taken
    branch's ops run.

    Args:
      pred: a scalar bool Tensor (a Python bool is a TypeError, as in TF1).
      true_fn, false_fn: callables returning the same nested structure of
        Tensors (or Operations); `fn1`/`fn2` are TF's deprecated names.
      strict: keep a one-element list or tuple as it is (by default TF1
        returns its element).
    Returns: the merged structure.
    Raises:
      TypeError: a branch is not callable, or the branches' structures have
        different sequence types.
      ValueError: a branch returns None, or structures, or dtypes, differ.
    """
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    if isinstance(pred, bool):
        raise TypeError("pred must not be a Python bool")
    if not callable(true_fn):
        raise TypeError("true_fn must be callable.")
    if not callable(false_fn):
        raise TypeError("false_fn must be callable.")
    graph = get_default_graph()
    with graph.name_scope(name or "cond") as scope:
        pred = convert_to_tensor(pred, dtype=dtypes.bool, name="pred", graph=graph)
        if pred.shape.rank not in (None, 0):
            raise ValueError(f"pred must be a scalar, got {pred.name} of shape {pred.shape}")
        p_false, p_true = switch(pred, pred)
        pivot_t = identity(p_true, name="switch_t").op
        pivot_f = identity(p_false, name="switch_f").op
        pred_id = identity(pred, name="pred_id")
        res_t = _branch(graph, true_fn, pred_id, 1, pivot_t, "true_fn")
        res_f = _branch(graph, false_fn, pred_id, 0, pivot_f, "false_fn")
        try:
            assert_same_structure(res_t[0], res_f[0])
        except TypeError as e:
            raise TypeError(f"Incompatible return types of true_fn and false_fn: {e}") from None
        except ValueError as e:
            raise ValueError(f"Incompatible return values of true_fn and false_fn: {e}") \
                from None
        merged = []
        for t, f in zip(res_t[1], res_f[1]):
            if t.dtype != f.dtype:
                raise ValueError(f"Outputs of true_fn and false_fn must have the same type: "
                                 f"{t.dtype.name} ({t.name}), {f.dtype.name} ({f.name})")
            out = merge([f, t], name="Merge")[0]
            out.op._cond_pred = pred_id  # Merge's gradient switches on it (grad/control_flow.py)
            merged.append(out)
        del scope
        result = pack_as(res_t[0], merged)
    if not strict and isinstance(result, (list, tuple)) and len(result) == 1 \
            and not hasattr(result, "_fields"):
        return result[0]
    return result


def _branch(graph, fn, pred_id: Tensor, side: int, pivot: Operation, what: str) -> tuple:
    """Builds one branch; returns (its structure, its flat outputs inside the branch)."""
    start = graph.version
    result = fn()
    if result is None:
        raise ValueError(f"{what} must have a return value.")
    leaves = []
    for leaf in flatten(result):
        leaf = as_tensor_or_op(leaf)
        if isinstance(leaf, Operation):  # an op's output is the pivot, after the op
            with graph.control_dependencies([leaf]):
                leaf = identity(pivot.outputs[0])
        elif not isinstance(leaf, Tensor):
            leaf = convert_to_tensor(leaf, graph=graph)
        leaves.append(leaf)
    inside_leaves = []
    for leaf in leaves:
        if leaf.op._id < start:  # an outside value returned as it is: through the Switch
            with graph.colocate_with(leaf.op):
                leaf = identity(leaf)
        inside_leaves.append(leaf)
    switches: dict = {}

    def value_of(t: Tensor) -> Tensor:
        if id(t) not in switches:
            with graph.colocate_with(t.op):
                switches[id(t)] = switch(t, pred_id)[side]
        return switches[id(t)]
    capture(graph, start, value_of, pivot)
    return result, inside_leaves


def case(pred_fn_pairs, default=None, exclusive: bool = False, strict: bool = False,
         name: str = "case"):
    """The fn of the first pair whose predicate is true, else `default()`.

    Args:
      pred_fn_pairs: a list of (bool Tensor, callable) pairs, or a dict
        {pred: fn} (evaluated in an unspecified order).
      default: the callable for when no predicate holds (required when the
        pairs are empty; otherwise the last pair's fn, as TF's).
      exclusive: at most one predicate may be true; more fail the step with
        InvalidArgumentError.
    Raises:
      TypeError: a pair is not (pred, callable), or a pred is not a bool tensor.
    """
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) \
        else list(pred_fn_pairs)
    graph = get_default_graph()
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in pred_fn_pairs must be a 2-tuple, got {pair!r}")
        pred, fn = pair
        if not callable(fn):
            raise TypeError(f"fn for pred {getattr(pred, 'name', pred)} must be callable.")
        if isinstance(pred, Tensor) and pred.dtype != dtypes.bool:
            raise TypeError(f"pred must be Tensor of type bool: {pred.name}")
    if not pairs and default is None:
        raise ValueError("No pred_fn_pairs and no default given to case")
    if default is None:
        pairs, default = pairs[:-1], pairs[-1][1]
    with graph.name_scope(name) as scope:
        preds = [convert_to_tensor(p, dtype=dtypes.bool, graph=graph) for p, _ in pairs]
        if exclusive and len(preds) > 1:
            check = _at_most_one_true(preds)
            preds = [with_dependencies([check], p) for p in preds]

        def build(i: int):
            if i == len(pairs):
                return default()
            return cond(preds[i], pairs[i][1], lambda: build(i + 1), strict=True,
                        name=f"If_{i}")
        del scope
        result = build(0)
    if not strict and isinstance(result, (list, tuple)) and len(result) == 1 \
            and not hasattr(result, "_fields"):
        return result[0]
    return result


def _at_most_one_true(preds: list) -> Operation:
    count = reduce_sum(cast(stack(preds), dtypes.int32))
    return Assert(less_equal(count, 1),
                  ["Input error: exclusive=True: more than 1 conditions "
                   f"({', '.join(p.name for p in preds)}) evaluated as True:", stack(preds)],
                  summarize=len(preds), name="exclusive_check")
