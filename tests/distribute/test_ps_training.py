"""The TF2 parameter-server tutorial's shape, end to end: an MLP's variables on the ps,
a traced step with GradientTape and apply_gradients, per-worker synthetic batches."""
import math
import time

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.examples.synthetic import Batches, mnist_like
from nbcluster.function import function
from nbcluster.grad.tape import GradientTape
from nbcluster.training.adam import AdamOptimizer
from nbcluster.training.gradient_descent import GradientDescentOptimizer

pytestmark = pytest.mark.timeout(180)


def build(strategy, optimizer):
    """784 -> 128 -> 10 MLP variables under the strategy; a step and an eval function."""
    with strategy.scope():
        w1 = tf.Variable(tf.truncated_normal([784, 128], stddev=1 / math.sqrt(784), seed=1),
                         name="w1")
        b1 = tf.Variable(tf.zeros([128]), name="b1")
        w2 = tf.Variable(tf.truncated_normal([128, 10], stddev=1 / math.sqrt(128), seed=2),
                         name="w2")
        b2 = tf.Variable(tf.zeros([10]), name="b2")
        global_step = tf.Variable(0, name="global_step", trainable=False)
    params = [w1, b1, w2, b2]

    def logits_of(x):
        return tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2

    @function
    def train_step(iterator):
        def replica_fn(x, y):
            with GradientTape() as tape:
                loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(
                    labels=y, logits=logits_of(x)))
            grads = tape.gradient(loss, params)
            optimizer.apply_gradients(zip(grads, params), global_step=global_step)
            return loss
        x, y = next(iterator)
        return strategy.run(replica_fn, args=(x, y))

    @function
    def accuracy(x, y):
        hits = tf.equal(tf.argmax(logits_of(x), 1), tf.argmax(y, 1))
        return tf.reduce_mean(tf.cast(hits, tf.float32))

    return train_step, accuracy, global_step


def dataset_fn():
    x, y = mnist_like(1024, seed=3)
    return iter(Batches(x, y, 64, seed=4).next, None)  # endless


def test_mlp_loss_falls(strategy, coordinator):
    train_step, accuracy, global_step = build(strategy, GradientDescentOptimizer(0.1))
    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
    steps = 120
    losses = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(steps)]
    coordinator.join()
    values = [float(v.fetch()) for v in losses]
    assert train_step.experimental_get_tracing_count() == 1
    assert np.mean(values[-10:]) < 0.5 * np.mean(values[:10]), values
    assert coordinator.fetch(global_step) == steps
    x, y = mnist_like(512, seed=99)  # held out
    score = coordinator.schedule(accuracy, args=(x, y))
    assert score.fetch() > 0.9


def test_training_goes_on_when_a_worker_is_killed(strategy, coordinator, ps_cluster):
    train_step, _, global_step = build(strategy, AdamOptimizer(0.001))
    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
    steps = 120
    losses = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(steps)]
    deadline = time.monotonic() + 60
    while sum(v._is_ready() for v in losses) < 15:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    ps_cluster.kill("worker", 1)
    coordinator.join()
    values = [float(v.fetch()) for v in losses]  # every step ran, on worker 0 if not on 1
    assert np.mean(values[-10:]) < 0.5 * np.mean(values[:10]), values
    assert steps <= coordinator.fetch(global_step) <= steps + coordinator.closures_retried
