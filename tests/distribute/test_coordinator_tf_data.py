"""ClusterCoordinator with tf.data datasets, as in TF2's ParameterServerStrategy tutorial:
a dataset_fn returning `tf.data.Dataset...repeat().batch()`, built and read on each
worker, `iter()` of the per-worker dataset, `next()` in the scheduled function."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.function import function

pytestmark = pytest.mark.timeout(180)


def test_the_tutorial_input_pipeline_trains_on_every_worker(strategy, coordinator):
    x = np.arange(40, dtype=np.float32).reshape(20, 2)
    y = (x @ np.array([1.0, -1.0], np.float32)).reshape(20, 1)
    with strategy.scope():
        w = tf.Variable(np.zeros((2, 1), np.float32), name="w")
        steps = tf.Variable(0.0, name="steps")

    def dataset_fn(input_context):
        batch = input_context.get_per_replica_batch_size(4)
        ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(20, seed=1).repeat()
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        return ds.batch(batch).prefetch(2)

    @function
    def per_worker_dataset_fn():
        return strategy.distribute_datasets_from_function(dataset_fn)

    per_worker_dataset = coordinator.create_per_worker_dataset(per_worker_dataset_fn)
    per_worker_iterator = iter(per_worker_dataset)

    @function
    def step_fn(iterator):
        features, labels = next(iterator)
        loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
        steps.assign_add(1.0)
        return features, labels, loss

    results = [coordinator.schedule(step_fn, args=(per_worker_iterator,)) for _ in range(10)]
    coordinator.join()
    rows = {tuple(r) for r in x}
    for value in results:
        features, labels, loss = value.fetch()
        assert features.shape == (4, 2) and labels.shape == (4, 1)
        assert all(tuple(r) in rows for r in features)  # rows of x, with their labels
        np.testing.assert_allclose(labels[:, 0], features[:, 0] - features[:, 1])
        np.testing.assert_allclose(loss, np.mean(labels ** 2), rtol=1e-5)  # w is zero
    assert coordinator.fetch(steps) == 10.0
    # Each worker's pipeline was built on that worker, its iterator with it.
    graph = strategy.graph
    iterators = [op for op in graph.get_operations() if op.type == "OneShotIterator"]
    assert sorted(op.device for op in iterators) == ["/job:worker/task:0", "/job:worker/task:1"]
    shuffles = [op for op in graph.get_operations() if op.type == "ShuffleDatasetV3"]
    assert sorted(op.device for op in shuffles) == ["/job:worker/task:0", "/job:worker/task:1"]


def test_a_finite_tf_data_dataset_runs_out_on_every_worker(strategy, coordinator):
    def dataset_fn():
        return tf.data.Dataset.range(1, 4).map(lambda v: tf.cast(v, tf.float32) * 10.0)

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @function
    def step(it):
        return next(it) + 1.0

    values = [coordinator.schedule(step, args=(iterator,)) for _ in range(7)]
    with pytest.raises(errors.OutOfRangeError):
        coordinator.join()
    got, out_of_range = [], 0
    for value in values:
        try:
            got.append(float(value.fetch()))
        except errors.OutOfRangeError:
            out_of_range += 1
    # Two workers, three elements each: six closures ran, the seventh found no data.
    assert out_of_range == 1 and sorted(got) == [11.0, 11.0, 21.0, 21.0, 31.0, 31.0]
