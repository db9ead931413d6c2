"""ClusterCoordinator on real task processes: schedule, join, fetch, per-worker data, errors."""
import threading

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.function import TensorSpec, function

pytestmark = pytest.mark.timeout(180)


def test_schedule_returns_at_once_and_join_waits_for_every_closure(strategy, coordinator):
    with strategy.scope():
        counter = tf.Variable(0.0, name="counter")
        w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
    traces = []
    gate = threading.Event()

    @function
    def step(x):
        traces.append(x.shape.as_list())
        counter.assign_add(1.0)
        return {"y": tf.matmul(x, w), "tag": "step"}

    first = coordinator.schedule(step, args=(np.ones((1, 3), np.float32),))
    results = [coordinator.schedule(step, args=(np.full((1, 3), i, np.float32),))
               for i in range(40)]
    gate.set()
    coordinator.join()
    assert coordinator.done()
    assert traces == [[1, 3]]  # one signature, one trace, whatever worker ran it
    np.testing.assert_allclose(first.fetch()["y"], [[6.0, 9.0]])
    for i, value in enumerate(results):
        assert value.fetch()["tag"] == "step"
        np.testing.assert_allclose(value.get()["y"], [[6.0 * i, 9.0 * i]])
    assert coordinator.fetch(counter) == 41.0
    assert coordinator.fetch({"c": counter, "r": first})["r"]["tag"] == "step"


def test_closures_run_on_both_workers(strategy, coordinator, ps_cluster):
    with strategy.scope():
        hits = tf.Variable(np.zeros(2, np.float32), name="hits")

    @function
    def step(which):
        return hits.assign_add(which)

    # Each worker's closure adds its own one-hot: both entries grow only if both ran.
    per_worker = tf.distribute.experimental.coordinator.PerWorkerValues(
        [np.array([1.0, 0.0], np.float32), np.array([0.0, 1.0], np.float32)])
    for _ in range(30):
        coordinator.schedule(step, args=(per_worker,))
    coordinator.join()
    got = coordinator.fetch(hits)
    assert got.sum() == 30.0 and got.min() > 0, got


def test_per_worker_dataset_feeds_each_worker_its_own_batches(strategy, coordinator):
    with strategy.scope():
        seen = tf.Variable(0.0, name="seen")

    def dataset_fn():  # 10 each: a worker out of data leaves the rest to the other
        return [(np.full((2, 2), k, np.float32), np.float32(k)) for k in range(1, 11)]

    per_worker = coordinator.create_per_worker_dataset(dataset_fn)
    iterator = iter(per_worker)
    with pytest.raises(NotImplementedError):
        next(iterator)

    @function
    def step(it):
        x, k = next(it)
        seen.assign_add(k)
        return tf.reduce_sum(x)

    values = [coordinator.schedule(step, args=(iterator,)) for _ in range(12)]
    coordinator.join()
    sums = sorted(float(v.fetch()) for v in values)
    # 12 batches from two workers' copies of 1..10: every value appears at most twice.
    assert all(sums.count(4.0 * k) <= 2 for k in range(1, 11))
    assert coordinator.fetch(seen) == sum(sums) / 4.0


def test_a_scheduled_function_reads_what_it_assigned(strategy, coordinator):
    # TF's RemoteValue example: the reads follow the assigns (TF2's automatic
    # control dependencies), on the ps, whichever worker runs it.
    with strategy.scope():
        v1 = tf.Variable(0.0, name="v1")
        v2 = tf.Variable(1.0, name="v2")
        count = tf.Variable(0.0, name="count")

    @function
    def worker_fn():
        v1.assign_add(0.1)
        v2.assign_sub(0.2)
        return v1.read_value() / v2.read_value()

    @function
    def bump():
        count.assign_add(1.0)
        return count * 1.0

    assert coordinator.schedule(worker_fn).fetch() == np.float32(0.125)
    # One at a time, so no other closure's add lands between an add and its read.
    assert [float(coordinator.schedule(bump).fetch()) for _ in range(8)] == \
        [float(i) for i in range(1, 9)]


def _uneven_per_worker_dataset(coordinator, lengths):
    """A per-worker dataset whose worker i has batches 1..lengths[i]."""
    made = iter(lengths)

    def dataset_fn():
        return [np.float32(k) for k in range(1, next(made) + 1)]
    return coordinator.create_per_worker_dataset(dataset_fn)


def test_a_worker_out_of_data_leaves_closures_to_one_with_data(strategy, coordinator):
    # Worker 0 has 2 batches, worker 1 ten: twelve closures use them all,
    # however fast worker 0 is (it used to take a third and fail the lot
    # with OutOfRangeError while worker 1 still had data).
    with strategy.scope():
        seen = tf.Variable(0.0, name="seen")
    iterator = iter(_uneven_per_worker_dataset(coordinator, [2, 10]))

    @function
    def step(it):
        k = next(it)
        seen.assign_add(k)
        return k

    values = [coordinator.schedule(step, args=(iterator,)) for _ in range(12)]
    coordinator.join()
    assert sorted(float(v.fetch()) for v in values) == sorted([1.0, 2.0] + list(range(1, 11)))
    assert coordinator.fetch(seen) == 58.0


def test_out_of_range_once_every_workers_data_ran_out(strategy, coordinator):
    iterator = iter(_uneven_per_worker_dataset(coordinator, [2, 3]))

    @function
    def step(it):
        return next(it) * 2.0

    values = [coordinator.schedule(step, args=(iterator,)) for _ in range(6)]
    with pytest.raises(errors.OutOfRangeError, match="End of sequence"):
        coordinator.join()
    got, out_of_range = [], 0
    for value in values:
        try:
            got.append(float(value.fetch()))
        except errors.OutOfRangeError:
            out_of_range += 1
    assert out_of_range == 1 and sorted(got) == [2.0, 2.0, 4.0, 4.0, 6.0]


def test_an_error_reaches_join_once_and_cancels_queued_closures(strategy, coordinator):
    with strategy.scope():
        v = tf.Variable(np.zeros(2, np.float32))

    @function
    def add(x):
        return v.assign_add(x)

    good = coordinator.schedule(add, args=(np.ones(2, np.float32),))
    coordinator.join()
    bad = coordinator.schedule(add, args=(np.ones(3, np.float32),))  # a shape error at trace
    queued = [coordinator.schedule(add, args=(np.ones(2, np.float32),)) for _ in range(50)]
    with pytest.raises(ValueError, match="incompatible"):
        coordinator.join()
    with pytest.raises(ValueError):
        bad.fetch()
    outcomes = []
    for value in queued:
        try:
            value.fetch()
            outcomes.append("ran")
        except errors.CancelledError:
            outcomes.append("cancelled")
    assert set(outcomes) <= {"ran", "cancelled"}
    coordinator.join()  # the error was raised once, then cleared
    assert coordinator.done()
    np.testing.assert_allclose(good.fetch(), [1.0, 1.0])
    expected = 1.0 + outcomes.count("ran")
    np.testing.assert_allclose(coordinator.fetch(v), [expected, expected])


def test_a_runtime_error_is_raised_by_schedule_after_it(strategy, coordinator):
    with strategy.scope():
        table = tf.Variable(np.zeros((4, 2), np.float32))

    @function(input_signature=[TensorSpec([None], tf.float32)])  # checked only when run
    def row(i):
        return tf.matmul(tf.ones([1, 4]), table) + tf.reshape(i, [2, 2])

    failed = coordinator.schedule(row, args=(np.ones(3, np.float32),))
    with pytest.raises(errors.InvalidArgumentError):
        failed.fetch()
    with pytest.raises(errors.InvalidArgumentError):
        coordinator.schedule(row, args=(np.ones(4, np.float32),))
    ok = coordinator.schedule(row, args=(np.ones(4, np.float32),))
    coordinator.join()
    assert ok.fetch().shape == (2, 2)


def test_schedule_rejects_what_it_cannot_run(strategy, coordinator):
    with strategy.scope():
        v = tf.Variable(1.0)
    with pytest.raises(TypeError, match="tf.function"):
        coordinator.schedule(lambda: v)
    traced = function(lambda x: x + v)
    with pytest.raises(TypeError, match="graph element"):
        coordinator.schedule(traced, args=(v,))
    with pytest.raises(ValueError, match="3 values for 2 workers"):
        coordinator.schedule(traced, args=(
            tf.distribute.experimental.coordinator.PerWorkerValues([1.0, 2.0, 3.0]),))
    assert tf.distribute.experimental.coordinator.ClusterCoordinator(strategy) is coordinator


def test_a_remote_value_can_be_an_argument(strategy, coordinator):
    with strategy.scope():
        base = tf.Variable(np.float32(10.0))

    @function
    def plus_base(x):
        return x + base

    first = coordinator.schedule(plus_base, args=(np.float32(1.0),))
    second = coordinator.schedule(plus_base, args=(first,))  # waits for `first` on its worker
    assert second.fetch() == 21.0


def test_close_cancels_what_is_still_queued(strategy, coordinator):
    with strategy.scope():
        w = tf.Variable(np.eye(128, dtype=np.float32))

    @function
    def work(x):
        return tf.reduce_sum(tf.matmul(tf.matmul(x, w), w))

    values = [coordinator.schedule(work, args=(np.ones((64, 128), np.float32),))
              for _ in range(300)]
    coordinator.close()
    outcomes = {"ran": 0, "cancelled": 0}
    for value in values:
        try:
            assert value.fetch() == 64 * 128
            outcomes["ran"] += 1
        except errors.CancelledError:
            outcomes["cancelled"] += 1
    assert outcomes["cancelled"] > 0, outcomes
    with pytest.raises(RuntimeError, match="closed"):
        coordinator.schedule(work, args=(np.ones((64, 128), np.float32),))
    again = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    try:
        assert again is not coordinator
        assert again.schedule(work, args=(np.ones((1, 128), np.float32),)).fetch() == 128
    finally:
        again.close()


def test_scheduling_inside_the_scope_while_workers_build(strategy, coordinator):
    # Leaving the scope while worker threads trace and copy must not disturb either.
    with strategy.scope():
        v = tf.Variable(0.0, name="v")

        @function
        def bump(k):
            return v.assign_add(k)

        values = [coordinator.schedule(bump, args=(np.float32(i),)) for i in range(20)]
    after = tf.Variable(1.0, name="after")  # outside the scope again: not placed
    with strategy.scope():
        placed = tf.Variable(1.0, name="placed")
    coordinator.join()
    assert all(value.fetch() >= i for i, value in enumerate(values))
    assert coordinator.fetch(v) == sum(range(20))
    assert after.device == "" and placed.device.startswith("/job:ps/")
