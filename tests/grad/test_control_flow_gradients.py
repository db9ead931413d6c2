"""Gradients through tf.cond, tf.case, tf.while_loop and TensorArrays match
central finite differences (as the gradient sweep checks single ops)."""
import re

import numpy as np
import pytest

import nbcluster as tf

RNG = np.random.default_rng(16)


def check(fn, values, tol=1e-6, eps=1e-6):
    """tf.gradients of sum(fn(*xs) * w) equals finite differences at `values`."""
    xs = [tf.placeholder(tf.float64, v.shape) for v in values]
    y = fn(*xs)
    with tf.Session() as sess:
        shape = np.shape(sess.run(y, dict(zip(xs, values))))
        w = tf.constant(RNG.uniform(0.5, 1.5, size=shape))
        loss = tf.reduce_sum(y * w)
        grads = tf.gradients(loss, xs)
        assert all(g is not None for g in grads), grads
        symbolic = sess.run(grads, dict(zip(xs, values)))
        for i, value in enumerate(values):
            numeric = np.zeros_like(value)
            for pos in np.ndindex(*value.shape):
                moved = []
                for sign in (1, -1):
                    shifted = [v.copy() for v in values]
                    shifted[i][pos] += sign * eps
                    moved.append(sess.run(loss, dict(zip(xs, shifted))))
                numeric[pos] = (moved[0] - moved[1]) / (2 * eps)
            np.testing.assert_allclose(symbolic[i], numeric, rtol=tol, atol=tol,
                                       err_msg=f"input {i}")


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_gradient_follows_the_taken_branch(sign):
    x = sign * RNG.uniform(0.5, 1.0, size=[3])
    w = RNG.uniform(0.5, 1.0, size=[3])
    check(lambda x, w: tf.cond(tf.reduce_sum(x) > 0, lambda: x * x * w,
                               lambda: tf.tanh(x) + w), [x, w])


def test_nested_cond_and_case_gradients():
    x = RNG.uniform(-1.0, 1.0, size=[4])

    def fn(x):
        s = tf.reduce_sum(x)
        inner = tf.cond(s > 10.0, lambda: x * 3.0, lambda: tf.cond(s > -10.0,
                                                                   lambda: x * x,
                                                                   lambda: x))
        return tf.case([(s > 100.0, lambda: inner * 0.0)], default=lambda: tf.exp(inner))
    check(fn, [x])


def test_while_loop_gradient_with_a_weight_read_from_outside():
    x = RNG.uniform(-1.0, 1.0, size=[3])
    w = RNG.uniform(0.5, 1.2, size=[3])

    def fn(x, w):
        _, y = tf.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, tf.tanh(a * w) + a),
                             [0, x])
        return y
    check(fn, [x, w])


def test_while_loop_gradient_through_cond_and_two_float_vars():
    x = RNG.uniform(0.2, 1.0, size=[2])

    def fn(x):
        def body(i, a, b):
            a2 = tf.cond(tf.equal(i % 2, 0), lambda: a * b, lambda: a + b)
            return i + 1, a2, tf.nn.sigmoid(b) * a
        _, a, b = tf.while_loop(lambda i, a, b: i < 5, body, [0, x, x * 2.0],
                                parallel_iterations=3)
        return a + b
    check(fn, [x])


def test_nested_while_loop_gradient():
    x = RNG.uniform(0.5, 1.0, size=[2])

    def fn(x):
        def outer(i, a):
            _, a = tf.while_loop(lambda j, b: j < i, lambda j, b: (j + 1, b * 0.9 + x), [0, a])
            return i + 1, a
        return tf.while_loop(lambda i, a: i < 3, outer, [0, x])[1]
    check(fn, [x])


def test_tensor_array_rnn_gradient():
    seq = RNG.uniform(-1.0, 1.0, size=[4, 3])
    w = RNG.uniform(-0.5, 0.5, size=[3, 3])

    def fn(seq, w):
        inputs = tf.TensorArray(tf.float64, size=4).unstack(seq)
        outputs = tf.TensorArray(tf.float64, size=4)

        def body(t, h, out):
            h = tf.tanh(tf.matmul(tf.reshape(inputs.read(t), [1, 3]), w) + h)
            return t + 1, h, out.write(t, tf.reshape(h, [3]))
        _, _, outputs = tf.while_loop(lambda t, h, o: t < 4, body,
                                      [0, tf.zeros([1, 3], tf.float64), outputs])
        return outputs.stack()
    check(fn, [seq, w])


def test_maximum_iterations_and_back_prop_false():
    x = RNG.uniform(0.5, 1.0, size=[2])
    check(lambda x: tf.while_loop(lambda a: tf.reduce_sum(a) < 1e9, lambda a: a * a + 0.5,
                                  [x], maximum_iterations=3), [x])
    xp = tf.placeholder(tf.float64, [2])
    frozen = tf.while_loop(lambda a: tf.reduce_sum(a) < 10.0, lambda a: a * 2.0, [xp],
                           back_prop=False)
    assert tf.gradients(tf.reduce_sum(frozen), [xp]) == [None]


def test_gradient_of_a_loop_already_run_only_adds_ops():
    x = tf.placeholder(tf.float64, [])
    y = tf.while_loop(lambda a: a < 100.0, lambda a: a * 3.0, [x])
    with tf.Session() as sess:
        assert sess.run(y, {x: 2.0}) == 162.0
        count = len(tf.get_default_graph().get_operations())
        (g,) = tf.gradients(y, [x])
        assert len(tf.get_default_graph().get_operations()) > count
        assert sess.run(y, {x: 2.0}) == 162.0
        assert sess.run(g, {x: 2.0}) == 81.0  # four iterations: 3**4


def test_a_loop_gradient_graph_round_trips_through_a_graph_def():
    """Stacks, TensorArrays and both loops survive as_graph_def/import_graph_def."""
    value = RNG.uniform(-1.0, 1.0, size=[4, 3])
    graph = tf.Graph()
    with graph.as_default():
        seq = tf.placeholder(tf.float64, [4, 3], name="seq")
        w = tf.constant(np.full((3, 3), 0.3), name="w")
        inputs = tf.TensorArray(tf.float64, size=4).unstack(seq)

        def body(t, h, out):
            h = tf.tanh(tf.matmul(tf.reshape(inputs.read(t), [1, 3]), w) + h)
            return t + 1, h, out.write(t, tf.reshape(h, [3]))
        _, _, outs = tf.while_loop(lambda t, h, o: t < 4, body,
                                   [0, tf.zeros([1, 3], tf.float64),
                                    tf.TensorArray(tf.float64, size=4)])
        loss = tf.reduce_sum(outs.stack() ** 2, name="loss")
        tf.identity(tf.gradients(loss, [seq])[0], name="grad")
        with tf.Session() as sess:
            before = sess.run(["loss:0", "grad:0"], {"seq:0": value})
    graph_def = tf.GraphDef.FromString(graph.as_graph_def().SerializeToString())
    assert {"StackV2", "StackPushV2", "StackPopV2", "TensorArrayGradV3"} <= \
        {n.op for n in graph_def.node}
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            after = sess.run(["loss:0", "grad:0"], {"seq:0": value})
    np.testing.assert_allclose(after[0], before[0], rtol=1e-12)
    np.testing.assert_allclose(after[1], before[1], rtol=1e-12)


def _power_loop(x, iterations, body_values=None):
    """v = 1, then `iterations` times a = v * x; v = a * x: x ** (2 * iterations)."""
    def body(i, v):
        a = v * x
        if body_values is not None:
            body_values.append(a)
        return i + 1, a * x
    return tf.while_loop(lambda i, v: i < iterations, body, [tf.constant(0), tf.constant(1.0)])[1]


def test_stop_gradients_at_a_loop_result_stops_there():
    # y = out * x with out = x ** 4 treated as a constant: dy/dx = out (TF: 16 at x = 2)
    x = tf.constant(2.0)
    out = _power_loop(x, 2)
    y = out * x
    with tf.Session() as sess:
        assert sess.run(tf.gradients(y, x)) == [80.0]
        assert sess.run(tf.gradients(y, x, stop_gradients=[out])) == [16.0]


def test_stop_gradients_at_a_tensor_in_the_loop_body_stops_each_iteration_there():
    # out = x ** 4; with each iteration's a = v * x a constant, only the last
    # iteration's `a * x` reaches x: d out/dx = a of that iteration = 8 (as TF)
    x = tf.constant(2.0)
    body_values = []
    out = _power_loop(x, 2, body_values)
    with tf.Session() as sess:
        assert sess.run(tf.gradients(out, x)) == [32.0]
        assert sess.run(tf.gradients(out, x, stop_gradients=[body_values[0]])) == [8.0]


def test_stop_gradients_in_a_body_that_builds_differently_each_call_is_refused_naming_it():
    x = tf.constant(2.0)
    calls = []

    def body(i, v):
        calls.append(1)
        a = v * x
        if len(calls) > 1:
            a = tf.identity(a)  # the gradient's rebuild makes one op more
        body.a = body.a if hasattr(body, "a") else a
        return i + 1, a * x
    out = tf.while_loop(lambda i, v: i < 2, body, [tf.constant(0), tf.constant(1.0)])[1]
    with pytest.raises(ValueError, match=re.escape(body.a.name)):
        tf.gradients(out, x, stop_gradients=[body.a])
