"""TF tasks and nbcluster tasks in one ClusterSpec, each its own process."""
from __future__ import annotations

import json

import numpy as np
import pytest
from tensorflow_processes import requires_tensorflow, run_program

import nbcluster as tf

pytestmark = [requires_tensorflow, pytest.mark.timeout(300)]


def test_an_nbcluster_master_trains_with_variables_on_a_tensorflow_ps(tasks):
    """Weights flow TF ps -> nbcluster worker and gradients back, 8 MiB both ways."""
    spec = tasks.cluster({"ps": ["tensorflow"], "worker": ["nbcluster"]})
    rng = np.random.default_rng(5)
    x_value = rng.standard_normal((16, 6)).astype(np.float32)

    def train(target, cluster):
        with tf.Graph().as_default():
            setter = tf.train.replica_device_setter(
                cluster=tf.train.ClusterSpec(cluster), worker_device="/job:worker/task:0") \
                if cluster else None
            with tf.device(setter):
                x = tf.placeholder(tf.float32, [None, 6])
                w = tf.get_variable("w", initializer=np.linspace(-1, 1, 18, dtype=np.float32)
                                    .reshape(6, 3))
                big = tf.get_variable("big", initializer=np.zeros(2 << 20, np.float32))
                loss = tf.reduce_mean(tf.square(tf.matmul(x, w))) + \
                    0.01 * tf.reduce_sum(tf.square(big - 1.0))
                step = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
            with tf.Session(target) as sess:
                sess.run(tf.global_variables_initializer())
                losses = [float(sess.run([loss, step], {x: x_value})[0]) for _ in range(4)]
                return losses, float(sess.run(tf.reduce_sum(big)))
    mixed, local = train(f"grpc://{spec['worker'][0]}", spec), train("", None)
    np.testing.assert_allclose(mixed[0], local[0], rtol=2e-5)
    np.testing.assert_allclose(mixed[1], local[1], rtol=1e-5)
    assert mixed[1] > 0  # the big gradient reached the TF ps and moved its variable


def test_a_tensorflow_master_trains_with_variables_on_an_nbcluster_ps(tasks):
    """TF's client and master on a TF worker; the ps is nbcluster's: TF's partitions
    registered and run here by rendezvous keys, tensors both ways, 256 MiB fetches."""
    spec = tasks.cluster({"ps": ["nbcluster"], "worker": ["tensorflow"]})
    result = run_program("tf_client.py", f"grpc://{spec['worker'][0]}", json.dumps(spec))
    np.testing.assert_allclose(result["losses"], result["reference_losses"], rtol=2e-5)
    assert result["callable"] == [[2.0, 4.0, 6.0], 4.0]
    assert result["fetch_256mib"] == [[64 << 20], 0.25, 0.25]
    assert "/job:ps/replica:0/task:0/device:CPU:0" in result["step_stats_devices"]
    assert result["error"][0] == "InvalidArgumentError"
    assert result["after_reset"] == "FailedPreconditionError"
