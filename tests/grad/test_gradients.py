"""tf.gradients: argument forms, Variables, unconnected inputs, summing several
paths, stop_gradients / StopGradient, grad_ys, name scopes and errors."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster.framework import op_registry
from nbcluster.grad.gradients import gradients

pytestmark = pytest.mark.timeout(60)


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def test_single_tensors_and_lists():
    x = tf.constant([1.0, 2.0])
    y = tf.constant([3.0, 4.0])
    z = x * y
    (gx,) = gradients(z, x)
    gx2, gy = tf.gradients([z], [x, y])
    np.testing.assert_array_equal(run(gx), [3.0, 4.0])
    np.testing.assert_array_equal(run([gx2, gy]), [[3.0, 4.0], [1.0, 2.0]])


def test_several_ys_are_summed():
    x = tf.constant(2.0)
    (g,) = tf.gradients([x * x, 3.0 * x], [x])
    assert run(g) == pytest.approx(4.0 + 3.0)


def test_several_paths_into_one_tensor_are_summed_with_add_n():
    x = tf.placeholder(tf.float32, [3])
    y = tf.exp(x) + tf.square(x) + x
    (g,) = tf.gradients(y, x)
    assert g.op.type == "AddN" and len(g.op.inputs) == 3
    v = np.array([0.0, 1.0, -1.0], np.float32)
    np.testing.assert_allclose(run(g, {x: v}), np.exp(v) + 2 * v + 1, rtol=1e-6)


def test_unconnected_xs_get_none():
    x = tf.constant(1.0)
    other = tf.constant(2.0)
    ints = tf.constant(3)
    assert tf.gradients(x * 2.0, [other, x])[0] is None
    assert tf.gradients(tf.cast(ints, tf.float32) * x, [ints])[0] is None


def test_variables_flow_through_read_to_the_variable():
    w = tf.Variable(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), name="w")
    x = tf.constant([[1.0, 1.0]])
    loss = tf.reduce_sum(tf.matmul(x, w))
    (gw,) = tf.gradients(loss, [w])
    assert gw.shape.as_list() == [2, 2] and gw.dtype == tf.float32
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(gw), np.ones((2, 2)))


def test_stop_gradients_argument_and_op():
    x = tf.constant(3.0)
    y = x * x
    z = y * x  # x^3
    (full,) = tf.gradients(z, x)
    (stopped,) = tf.gradients(z, x, stop_gradients=[y])
    (by_op,) = tf.gradients(tf.stop_gradient(x * x) * x, x)
    assert run(full) == pytest.approx(27.0)
    assert run(stopped) == pytest.approx(9.0)  # y held constant
    assert run(by_op) == pytest.approx(9.0)
    assert tf.gradients(tf.stop_gradient(x), x) == [None]


def test_grad_ys_scale_the_result_and_must_match_dtype():
    x = tf.constant([1.0, 2.0])
    (g,) = tf.gradients(x * x, x, grad_ys=[tf.constant([10.0, 100.0])])
    np.testing.assert_array_equal(run(g), [20.0, 400.0])
    (g_list,) = tf.gradients([x * x], x, grad_ys=[[1.0, 0.0]])
    np.testing.assert_array_equal(run(g_list), [2.0, 0.0])
    with pytest.raises(TypeError, match="grad_ys_0.*float64|float64"):
        tf.gradients(x * x, x, grad_ys=[tf.constant([1.0, 2.0], tf.float64)])
    with pytest.raises(ValueError, match="Passed 2 grad_ys for 1 ys"):
        tf.gradients(x * x, x, grad_ys=[None, None])


def test_gradient_ops_are_named_under_the_scope():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.exp(x, name="e")
    (g,) = tf.gradients(y, x, name="my_grads")
    assert g.name.startswith("my_grads/e_grad/")
    new_ops = [op.name for op in tf.get_default_graph().get_operations()
               if op.name not in ("x", "e")]
    assert new_ops and all(n.startswith("my_grads/") for n in new_ops)


def test_integer_x_and_integer_paths_give_none():
    n = tf.placeholder(tf.int32, [])
    x = tf.constant(2.0)
    y = tf.cast(n, tf.float32) * x
    gn, gx = tf.gradients(y, [n, x])
    assert gn is None
    assert run(gx, {n: 5}) == pytest.approx(5.0)


def test_op_without_a_gradient_raises_lookup_error(monkeypatch):
    # A private copy of the op table, so the registry sweep never sees this op.
    monkeypatch.setattr(op_registry, "_OPS", dict(op_registry._OPS))
    op_registry.register_op("GradTestOpWithoutGradient")(
        lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)])
    x = tf.constant(1.0)
    graph = tf.get_default_graph()
    y = graph.create_op("GradTestOpWithoutGradient", [x], {"T": tf.float32},
                        name="mystery").outputs[0]
    with pytest.raises(LookupError, match="No gradient defined for operation 'mystery' "
                                          r"\(op type: GradTestOpWithoutGradient\)"):
        tf.gradients(y * 2.0, x)
    # Not on a path from x: no gradient is needed, so no error.
    assert tf.gradients(y * 2.0, tf.constant(3.0)) == [None]


def test_bad_arguments():
    x = tf.constant(1.0)
    with pytest.raises(TypeError, match="xs must hold Tensors or Variables, got 'x'"):
        tf.gradients(x, ["x"])
    with pytest.raises(ValueError, match="Invalid aggregation_method specified 7"):
        tf.gradients(x * x, x, aggregation_method=7)


def test_complex_xs_are_refused_and_carry_no_gradient():
    z = tf.constant(np.array([1 + 2j], np.complex64))
    with pytest.raises(NotImplementedError, match="complex.*Const.*complex64"):
        tf.gradients(z * z, z)
    x = tf.constant([1.0])
    y = tf.cast(tf.cast(x, tf.complex64) * z, tf.float32)
    assert tf.gradients(y, x) == [None]


def test_gate_gradients_and_aggregation_method_give_the_same_values():
    a = tf.constant([[1.0, 2.0]])
    b = tf.constant([[3.0], [4.0]])
    y = tf.matmul(a, b) + tf.matmul(a, b)
    plain = tf.gradients(y, [a, b])
    gated = tf.gradients(y, [a, b], gate_gradients=True, aggregation_method=1)
    for p, g in zip(run(plain), run(gated)):
        np.testing.assert_array_equal(p, g)


def test_x_that_is_also_y():
    x = tf.constant([1.0, 2.0])
    (g,) = tf.gradients(x, x)
    np.testing.assert_array_equal(run(g), [1.0, 1.0])


def test_without_colocation_ops_take_the_enclosing_device_scope():
    with tf.device("/device:CPU:0"):
        x = tf.constant([1.0, 2.0])
        y = tf.exp(x)
    with tf.device("/job:localhost/task:0"):
        (g,) = tf.gradients(y, x, colocate_gradients_with_ops=False)
    assert "_class" not in g.op._attrs
    assert g.op.device == "/job:localhost/task:0"


def test_public_names():
    from nbcluster.grad.tape import GradientTape

    assert tf.gradients is gradients and tf.GradientTape is GradientTape
    assert tf.stop_gradient and tf.add_n and tf.RegisterGradient and tf.NotDifferentiable


def _ops_needed(tensors) -> set:
    """Every op a run of `tensors` executes: inputs and control inputs, transitively."""
    seen, stack = set(), [t.op for t in tensors]
    while stack:
        op = stack.pop()
        if op not in seen:
            seen.add(op)
            stack.extend([t.op for t in op.inputs] + op.control_inputs)
    return seen


def test_a_feed_off_every_path_from_xs_gets_no_gradient_branch_even_gated():
    # Training's x @ w: the gradient into the placeholder x (a second MatMul as
    # large as the forward one) must not run, also under GATE_OP's tuple.
    x = tf.placeholder(tf.float32, [4, 3])
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))
    loss = tf.reduce_sum(tf.matmul(x, w))
    (gated,) = tf.gradients(loss, [w], gate_gradients=True)
    matmuls = [op for op in _ops_needed([gated]) if op.type == "MatMul"]
    assert len(matmuls) == 1  # x^T @ dy; not dy @ w^T
    value = np.ones((4, 3), np.float32)
    with tf.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run(gated, {x: value}), value.T @ np.ones((4, 2)))
