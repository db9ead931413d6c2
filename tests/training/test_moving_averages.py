"""ExponentialMovingAverage: shadow values, decay from num_updates, names and placement
next to the variable, and restoring the averages into the variables with a Saver."""
import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph


def test_each_apply_moves_the_shadow_toward_the_variable():
    v = tf.Variable([10.0, 20.0], name="v")
    ema = tf.train.ExponentialMovingAverage(0.9)
    update = ema.apply([v])
    shadow = ema.average(v)
    assert shadow.op.name == "v/ExponentialMovingAverage" == ema.average_name(v)
    assert not shadow.trainable and shadow in tf.global_variables()
    assert update.name == "ExponentialMovingAverage"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(shadow), [10.0, 20.0])  # starts at v's value
        sess.run(v.assign([0.0, 0.0]))
        sess.run(update)
        np.testing.assert_allclose(sess.run(shadow), [9.0, 18.0])
        sess.run(update)
        np.testing.assert_allclose(sess.run(shadow), [8.1, 16.2], rtol=1e-6)


def test_num_updates_makes_early_averages_follow_faster():
    v = tf.Variable(10.0)
    step = tf.Variable(0, dtype=tf.int64, trainable=False)
    ema = tf.train.ExponentialMovingAverage(0.99, num_updates=step)
    update = ema.apply([v])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(v.assign(0.0))
        sess.run(update)  # decay min(0.99, 1/10) = 0.1
        assert sess.run(ema.average(v)) == pytest.approx(1.0)
        sess.run(step.assign(990))  # decay min(0.99, 991/1000) = 0.99
        sess.run(update)
        assert sess.run(ema.average(v)) == pytest.approx(0.99)


def test_shadows_live_with_their_variables_on_the_ps():
    spec = tf.train.ClusterSpec({"ps": ["127.0.0.1:1", "127.0.0.1:2"], "worker": ["127.0.0.1:3"]})
    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        a, b = tf.Variable(1.0, name="a"), tf.Variable(2.0, name="b")
        ema = tf.train.ExponentialMovingAverage(0.5)
        ema.apply([a, b])
    assert ema.average(a).device == a.device == "/job:ps/task:0"
    assert ema.average(b).device == b.device == "/job:ps/task:1"


def test_a_saver_restores_the_averages_into_the_variables(tmp_path):
    w = tf.Variable([4.0, 8.0], name="w")
    other = tf.Variable(3.0, name="other", trainable=False)
    ema = tf.train.ExponentialMovingAverage(0.5)
    update = ema.apply([w])
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(w.assign([0.0, 0.0]))
        sess.run(update)  # the shadow: [2, 4]
        path = saver.save(sess, str(tmp_path / "model"))
    with tf.Graph().as_default():
        w2 = tf.Variable([0.0, 0.0], name="w")
        other2 = tf.Variable(0.0, name="other", trainable=False)
        names = tf.train.ExponentialMovingAverage(0.5).variables_to_restore()
        assert names == {"w/ExponentialMovingAverage": w2, "other": other2}
        with tf.Session() as sess:
            tf.train.Saver(names).restore(sess, path)
            np.testing.assert_allclose(sess.run(w2), [2.0, 4.0])
            assert sess.run(other2) == 3.0
    assert other is not None


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="decay must be a number in \\[0, 1\\], not 1.5"):
        tf.train.ExponentialMovingAverage(1.5)
    ema = tf.train.ExponentialMovingAverage(0.9)
    with pytest.raises(TypeError, match="averages float Variables"):
        ema.apply([tf.constant(1.0)])
    v = tf.Variable(1.0, name="once")
    ema.apply([v])
    with pytest.raises(ValueError, match="already computed for: once"):
        ema.apply([v])
