"""A TF1 training loop fed by tf.data: MonitoredTrainingSession ends at the data's end."""
import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(120)


def test_monitored_training_stops_when_the_dataset_runs_out():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3)).astype(np.float32)
    w_true = np.array([[1.0], [-2.0], [0.5]], np.float32)
    y = x @ w_true
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(40, seed=2).repeat(30).batch(8)
    features, labels = tf.compat.v1.data.make_one_shot_iterator(ds).get_next()
    w = tf.Variable(np.zeros((3, 1), np.float32), name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    steps, w_now = 0, None
    with tf.train.MonitoredTrainingSession() as sess:
        while not sess.should_stop():
            _, w_now = sess.run([train, w])
            steps += 1
    assert steps == 30 * 40 // 8  # every batch trained once, then OutOfRangeError stopped it
    np.testing.assert_allclose(w_now, np.linalg.lstsq(x, y, rcond=None)[0], atol=1e-4)
