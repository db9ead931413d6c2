"""nbcluster's Session on real TensorFlow servers (`tf.distribute.Server`
processes): our client speaks TF's MasterService when a task is TensorFlow."""
from __future__ import annotations

import numpy as np
import pytest
from tensorflow_processes import requires_tensorflow

import nbcluster as tf
from nbcluster import errors

pytestmark = [requires_tensorflow, pytest.mark.timeout(300)]

RNG = np.random.default_rng(11)
X = RNG.standard_normal((32, 12)).astype(np.float32)
Y = RNG.integers(0, 4, 32)


def _train(target: str, cluster=None) -> list:
    """Losses of 4 SGD then 4 Adam steps of a small MLP; variables on the ps with `cluster`."""
    with tf.Graph().as_default():
        setter = tf.train.replica_device_setter(
            cluster=tf.train.ClusterSpec(cluster), worker_device="/job:worker/task:0") \
            if cluster else None
        with tf.device(setter):
            x = tf.placeholder(tf.float32, [None, 12], name="x")
            y = tf.placeholder(tf.int64, [None], name="y")
            w1 = tf.get_variable("w1", initializer=np.linspace(-.4, .4, 96, dtype=np.float32)
                                 .reshape(12, 8))
            b1 = tf.get_variable("b1", [8], initializer=tf.zeros_initializer())
            w2 = tf.get_variable("w2", initializer=np.linspace(.3, -.3, 32, dtype=np.float32)
                                 .reshape(8, 4))
            logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2)
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(
                labels=tf.one_hot(y, 4), logits=logits))
            sgd = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
            adam = tf.train.AdamOptimizer(0.01).minimize(loss)
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            losses = [float(sess.run([loss, op], {x: X, y: Y})[0]) for op in [sgd] * 4 + [adam] * 4]
            return losses + [float(sess.run(loss, {x: X, y: Y}))]


def test_training_on_a_tensorflow_cluster_matches_nbcluster_s_own_run(tasks):
    spec = tasks.cluster({"ps": ["tensorflow"], "worker": ["tensorflow"]})
    on_tf = _train(f"grpc://{spec['worker'][0]}", spec)
    np.testing.assert_allclose(on_tf, _train(""), rtol=2e-5)
    assert on_tf[-1] < on_tf[0]


def test_repeated_runs_extends_large_tensors_and_errors_on_a_tensorflow_server(tasks):
    spec = tasks.cluster({"worker": ["tensorflow"]})
    with tf.Graph().as_default(), tf.Session(f"grpc://{spec['worker'][0]}") as sess:
        fed = tf.placeholder(tf.float32, [None], name="fed")
        total = tf.reduce_sum(fed)
        for n in (3, 3 << 20, 5):  # 12 MiB in one unary message between two small ones
            assert sess.run(total, {fed: np.full(n, 2.0, np.float32)}) == 2.0 * n
        big = tf.fill([2 << 20], 0.5)  # added after the first runs: ExtendSession
        got = sess.run(big)
        assert got.shape == (2 << 20,) and float(got.sum()) == 0.5 * (2 << 20)
        doubled = fed * 2.0  # a second extend: TF's graph version moved on
        np.testing.assert_array_equal(sess.run(doubled, {fed: [1.0, 2.0]}), [2.0, 4.0])
        with pytest.raises(errors.InvalidArgumentError, match="8 values"):
            sess.run(tf.reshape(fed, [3]), {fed: np.ones(8, np.float32)})
        assert sess.run(total, {fed: [1.0, 1.0]}) == 2.0  # the session goes on
