"""The gradient table: duplicates refused, NotDifferentiable, lookup, and the sweep
that every registered op type has a gradient or a NotDifferentiable declaration.

Sweep rule: op types registered with `stateful=True` (variables, queues,
random sources, training updates, save/restore) need no declaration; they
never lie on a differentiable path. Everything else must be declared.
"""
import pytest

import nbcluster  # noqa: F401 - registers ops defined outside ops/ (Const, _Send, ...)
import nbcluster.master_worker.send_recv  # noqa: F401 - _Send/_Recv
from nbcluster.framework.op_registry import registered_ops
from nbcluster.grad import gradient_table

from op_families import load_every_op_family

pytestmark = pytest.mark.timeout(60)


def test_every_stateless_op_has_a_gradient_or_is_not_differentiable():
    load_every_op_family()
    missing = sorted(name for name, op_def in registered_ops().items()
                     if not op_def.stateful and not gradient_table.is_declared(name))
    assert not missing, f"op types with neither a gradient nor NotDifferentiable: {missing}"


def test_every_declared_type_is_a_registered_op():
    load_every_op_family()
    ops = registered_ops()
    stray = sorted(name for name in gradient_table.registered_gradients() if name not in ops)
    assert not stray, f"gradients declared for unknown op types: {stray}"


def test_core_ops_have_real_rules():
    for op_type in ("MatMul", "BatchMatMulV2", "AddV2", "Sub", "Mul", "RealDiv", "Neg",
                    "Sum", "Mean", "Max", "Min", "Reshape", "Transpose", "ConcatV2", "Pack",
                    "ExpandDims", "Squeeze", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt",
                    "Square", "Abs", "Pow", "Softmax", "SoftmaxCrossEntropyWithLogits",
                    "Identity", "Cast", "Maximum", "Minimum", "AddN"):
        assert callable(gradient_table.get_gradient_rule(op_type)), op_type
    for op_type in ("Shape", "Size", "Rank", "ArgMax", "Equal", "StopGradient", "Const",
                    "BroadcastGradientArgs"):
        assert gradient_table.get_gradient_rule(op_type) is None, op_type


def test_duplicates_are_refused():
    with pytest.raises(KeyError, match="'MatMul' is already registered"):
        gradient_table.register_gradient("MatMul")(lambda op, grad: [None, None])
    with pytest.raises(KeyError, match="'Shape' is already registered"):
        gradient_table.NotDifferentiable("Shape")
    with pytest.raises(KeyError, match="'Relu' is already registered"):
        gradient_table.NotDifferentiable("Relu")


def test_bad_op_type_and_unknown_lookup():
    with pytest.raises(TypeError, match="op_type must be a string, got 3"):
        gradient_table.register_gradient(3)
    with pytest.raises(TypeError, match="must be a string"):
        gradient_table.NotDifferentiable(None)
    with pytest.raises(LookupError, match="No gradient defined for op type: NoSuchOp"):
        gradient_table.get_gradient_rule("NoSuchOp")


def test_register_and_use_a_new_rule(monkeypatch):
    monkeypatch.setattr(gradient_table, "_RULES", dict(gradient_table._RULES))
    rule = gradient_table.register_gradient("FakeOpForTest")(lambda op, grad: [grad])
    assert gradient_table.get_gradient_rule("FakeOpForTest") is rule
    assert gradient_table.is_declared("FakeOpForTest")
    assert not gradient_table.is_declared("AnotherFakeOp")


def test_a_unit_rule_is_found_by_its_unit_type_and_duplicates_are_refused(monkeypatch):
    from nbcluster.grad import control_flow_while
    assert gradient_table.get_unit_gradient_rule("WhileContext") is control_flow_while.while_gradient
    with pytest.raises(KeyError, match="unit type 'WhileContext' is already registered"):
        gradient_table.register_unit_gradient("WhileContext")(lambda ctx, *grads: [])
    with pytest.raises(LookupError, match="No gradient defined for unit type: NoSuchUnit"):
        gradient_table.get_unit_gradient_rule("NoSuchUnit")
    assert "WhileContext" not in gradient_table.registered_gradients()  # not an op type
