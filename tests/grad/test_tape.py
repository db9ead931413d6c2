"""GradientTape in graph-building code: sources, watch, persistence, stop_recording,
reset, nested source structures and output_gradients."""
import collections

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.grad.tape import GradientTape

pytestmark = pytest.mark.timeout(60)


def run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def test_variables_and_watched_tensors():
    w = tf.Variable([1.0, 2.0], name="w")
    x = tf.constant([3.0, 4.0])
    with GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(w * x * x)
    gw, gx = tape.gradient(loss, [w, x])
    got_w, got_x = run([gw, gx])
    np.testing.assert_array_equal(got_w, [9.0, 16.0])
    np.testing.assert_array_equal(got_x, [6.0, 16.0])


def test_unwatched_tensor_from_before_the_tape_gets_none():
    x = tf.constant(2.0)
    with GradientTape() as tape:
        y = x * x
        z = y * 3.0
    assert tape.gradient(z, x) is None


def test_intermediate_tensors_built_under_the_tape_are_sources():
    x = tf.constant(2.0)
    with GradientTape() as tape:
        y = x * x
        z = y * 3.0
    assert run(tape.gradient(z, y)) == pytest.approx(3.0)


def test_watch_accessed_variables_false_needs_watch():
    v = tf.Variable(1.0)
    u = tf.Variable(2.0)
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(u)
        y = v * u
    gv, gu = tape.gradient(y, [v, u])
    assert gv is None
    assert run(gu) == pytest.approx(1.0)
    assert tape.watched_variables() == (u,)


def test_non_persistent_tape_allows_one_gradient_call():
    x = tf.constant(3.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent GradientTape can only be used"):
        tape.gradient(y, x)


def test_persistent_tape_allows_several():
    x = tf.constant(3.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert run(tape.gradient(y, x)) == pytest.approx(6.0)
    assert run(tape.gradient(z, x)) == pytest.approx(4 * 27.0)


def test_stop_recording_blocks_the_gradient():
    x = tf.constant(3.0)
    with GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            frozen = x * x
        y = frozen * x
    assert run(tape.gradient(y, x)) == pytest.approx(9.0)
    with pytest.raises(RuntimeError, match="not currently recording"):
        with tape.stop_recording():
            pass


def test_reset_forgets_watched_tensors():
    x = tf.constant(3.0)
    with GradientTape() as tape:
        tape.watch(x)
        tape.reset()
        y = x * x
    assert tape.gradient(y, x) is None


def test_nested_sources_and_output_gradients():
    Pair = collections.namedtuple("Pair", "a b")
    a = tf.Variable(1.0)
    b = tf.Variable(2.0)
    c = tf.Variable(3.0)
    with GradientTape() as tape:
        y1 = a * b
        y2 = c * 2.0
    out = tape.gradient([y1, y2], {"pair": Pair(a, b), "rest": [c]},
                        output_gradients=[tf.constant(10.0), tf.constant(1.0)])
    assert set(out) == {"pair", "rest"} and isinstance(out["pair"], Pair)
    values = run([out["pair"].a, out["pair"].b, out["rest"][0]])
    assert values == pytest.approx([20.0, 10.0, 2.0])


def test_unconnected_zero_and_bad_watch():
    x = tf.constant([1.0, 2.0])
    other = tf.Variable([5.0, 6.0])
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * 2.0
    assert tape.gradient(y, other) is None
    np.testing.assert_array_equal(run(tape.gradient(y, other, unconnected_gradients="zero")),
                                  [0.0, 0.0])
    with pytest.raises(ValueError, match="not tf.Tensor or tf.Variable"):
        tape.watch("x")
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients="maybe")


def test_gradient_inside_a_persistent_tape_is_recorded_for_second_order():
    x = tf.constant(2.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x * x
        g = tape.gradient(y, x)  # built while recording, so recorded too
    assert run(g) == pytest.approx(12.0)
    assert run(tape.gradient(g, x)) == pytest.approx(12.0)  # 6x


def test_tape_inside_a_traced_function():
    from nbcluster.function import function

    w = tf.Variable([1.0, 2.0], name="w")

    @function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x * x)
        return w.assign_sub(0.1 * tape.gradient(loss, w))

    out = step(tf.constant([1.0, 3.0]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(out), [0.9, 1.1], rtol=1e-6)
        np.testing.assert_allclose(sess.run(out), [0.8, 0.2], rtol=1e-5)
