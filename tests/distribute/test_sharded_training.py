"""The TF2 parameter-server tutorial's sharded path on real task processes: variables
cut by a partitioner over two ps tasks, datasets from distribute_datasets_from_function,
a step scaled by compute_average_loss, optimizers updating the shards."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster.distribute.cluster_resolver import SimpleClusterResolver
from nbcluster.distribute.experimental.partitioners import (
    FixedShardsPartitioner,
    MinSizePartitioner,
)
from nbcluster.function import function
from nbcluster.grad.tape import GradientTape
from nbcluster.training.gradient_descent import GradientDescentOptimizer

pytestmark = pytest.mark.timeout(180)

FEATURES, IDS = 12, 20
RNG = np.random.default_rng(5)
W_TRUE = RNG.normal(size=(FEATURES, 1)).astype(np.float32)
B_TRUE = RNG.normal(size=(IDS, 1)).astype(np.float32)


def dataset_fn(input_context):
    batch = input_context.get_per_replica_batch_size(32)
    rng = np.random.default_rng(input_context.input_pipeline_id + 11)

    def batches():
        while True:
            x = rng.normal(size=(batch, FEATURES)).astype(np.float32)
            ids = rng.integers(0, IDS, size=batch).astype(np.int32)
            yield x, ids, x @ W_TRUE + B_TRUE[ids]
    return batches()


def test_sharded_variables_train_across_two_ps_tasks(cluster_factory):
    cluster = cluster_factory({"ps": 2, "worker": 2}, timeout=90)
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        SimpleClusterResolver(cluster.spec, rpc_layer="grpc"),
        variable_partitioner=MinSizePartitioner(min_shard_bytes=16, max_shards=2))
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    try:
        with strategy.scope():
            w = tf.Variable(np.zeros((FEATURES, 1), np.float32), name="w")
            b = tf.Variable(np.zeros((IDS, 1), np.float32), name="b")
            step = tf.Variable(0, name="step", trainable=False)
        assert isinstance(w, tf.distribute.ShardedVariable) and len(w.variables) == 2
        assert {v.device for v in w.variables} == {
            "/job:ps/replica:0/task:0/device:CPU:0", "/job:ps/replica:0/task:1/device:CPU:0"}
        params = list(w.variables) + list(b.variables)
        assert set(tf.trainable_variables()) == set(params)
        optimizer = GradientDescentOptimizer(0.2)

        @function
        def per_worker_dataset_fn():
            return strategy.distribute_datasets_from_function(dataset_fn)

        @function
        def train_step(iterator):
            def replica_fn(x, ids, y):
                with GradientTape() as tape:
                    pred = tf.matmul(x, w) + tf.nn.embedding_lookup(b, ids)
                    loss = tf.nn.compute_average_loss(tf.reduce_sum(tf.square(pred - y), 1))
                grads = tape.gradient(loss, params)
                optimizer.apply_gradients(zip(grads, params), global_step=step)
                return loss
            x, ids, y = next(iterator)
            return strategy.run(replica_fn, args=(x, ids, y))

        iterator = iter(coordinator.create_per_worker_dataset(per_worker_dataset_fn))
        losses = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(150)]
        coordinator.join()
        values = [float(v.fetch()) for v in losses]
        assert np.mean(values[-10:]) < 0.05 * np.mean(values[:10]), values
        assert coordinator.fetch(step) == 150
        learned_w, learned_b = coordinator.fetch([w, b])
        np.testing.assert_allclose(learned_w, W_TRUE, atol=0.1)
        np.testing.assert_allclose(learned_b, B_TRUE, atol=0.3)
        # each shard holds its own rows: the first of w's on ps 0
        np.testing.assert_allclose(coordinator.fetch(w.variables[0]), learned_w[:6])
    finally:
        coordinator.close()


def test_a_sharded_table_assigned_from_the_coordinator(cluster_factory):
    cluster = cluster_factory({"ps": 2, "worker": 1}, timeout=90)
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        SimpleClusterResolver(cluster.spec, rpc_layer="grpc"),
        variable_partitioner=FixedShardsPartitioner(2))
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    try:
        table = np.arange(15, dtype=np.float32).reshape(5, 3)
        with strategy.scope():
            v = tf.Variable(np.zeros((5, 3), np.float32), name="table")

        @function
        def put(value):
            return v.assign(value)  # each shard gets its rows; the whole read back

        @function
        def look_up(ids):
            return tf.nn.embedding_lookup(v, ids)

        assigned = coordinator.schedule(put, args=(table,))
        coordinator.join()
        rows = coordinator.schedule(look_up, args=(np.array([4, 0, 2], np.int32),))
        np.testing.assert_array_equal(assigned.fetch(), table)
        np.testing.assert_array_equal(rows.fetch(), table[[4, 0, 2]])
        np.testing.assert_array_equal(coordinator.fetch(v.variables[1]), table[3:])
    finally:
        coordinator.close()
