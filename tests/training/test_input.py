"""Queue-based input as TF1: producers and batchers fill queues through their
QueueRunners, num_epochs ends the input with OutOfRangeError, and
RandomShuffleQueue mixes what it hands out."""
import collections

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors

pytestmark = pytest.mark.timeout(60)


def drain(fetch, init_local=True):
    """Runs `fetch` until OutOfRangeError; the values, and the error's message."""
    out = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        if init_local:
            sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord=coord)
        try:
            while True:
                out.append(sess.run(fetch))
        except errors.OutOfRangeError as e:
            message = e.message
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
    assert not any(t.is_alive() for t in threads)
    return out, message


def test_slice_input_producer_and_batch_give_each_row_once_per_epoch():
    x = np.arange(10, dtype=np.float32)
    ex, ey = tf.train.slice_input_producer([tf.constant(x), tf.constant(-x)], num_epochs=2,
                                           seed=1)
    assert ex.shape.as_list() == [] and ey.dtype == tf.float32
    bx, by = tf.train.batch([ex, ey], batch_size=3, allow_smaller_final_batch=True)
    assert bx.shape.as_list() == [None] and bx.op.name == "batch"
    runners = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    assert len(runners) == 2 and all(isinstance(r, tf.train.QueueRunner) for r in runners)
    batches, message = drain([bx, by])
    assert [len(b) for b, _ in batches] == [3] * 6 + [2]  # 20 rows, a short last batch
    for b, c in batches:
        np.testing.assert_array_equal(c, -b)  # rows stay together
    seen = collections.Counter(np.concatenate([b for b, _ in batches]).tolist())
    assert seen == {float(v): 2 for v in x}
    order = np.concatenate([b for b, _ in batches])
    assert not np.array_equal(order[:10], x)  # shuffled
    assert "is closed and has insufficient elements" in message


def test_batch_without_smaller_final_batch_drops_the_remainder():
    q = tf.train.range_input_producer(7, num_epochs=1, shuffle=False)
    batch = tf.train.batch([q.dequeue()], batch_size=3)  # one tensor in, one tensor out
    assert batch.shape.as_list() == [3] and batch.dtype == tf.int32
    batches, _ = drain(batch)
    assert [b.tolist() for b in batches] == [[0, 1, 2], [3, 4, 5]]


def test_string_input_producer_in_order_and_epochs_counted_in_a_local_variable():
    q = tf.train.string_input_producer(["a.csv", "b.csv", "c.csv"], num_epochs=2,
                                       shuffle=False)
    epochs = [v for v in tf.local_variables() if v.op.name.endswith("limit_epochs/epochs")]
    assert len(epochs) == 1 and epochs[0].dtype == tf.int64
    names, message = drain(q.dequeue())
    assert names == [b"a.csv", b"b.csv", b"c.csv"] * 2
    assert "FIFOQueue" in message


def test_the_epoch_counter_needs_local_init_as_in_tf():
    q = tf.train.string_input_producer(["a"], num_epochs=1)
    with pytest.raises(errors.FailedPreconditionError):
        drain(q.dequeue(), init_local=False)


def test_dict_batches_keep_their_keys_and_enqueue_many_splits_rows():
    rows = {"x": tf.constant(np.arange(8).reshape(4, 2)), "y": tf.constant([0, 1, 2, 3])}
    out = tf.train.batch(rows, batch_size=2, enqueue_many=True, num_threads=1)
    assert sorted(out) == ["x", "y"] and out["x"].shape.as_list() == [2, 2]
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord=coord)
        got = sess.run(out)
        np.testing.assert_array_equal(got["x"][:, 0] // 2, got["y"])
        coord.request_stop()  # the cancel wakes the enqueue waiting on the full queue
        coord.join(threads, stop_grace_period_secs=10)


def test_shuffle_batch_mixes_and_keeps_min_after_dequeue_until_closed():
    q = tf.train.range_input_producer(100, num_epochs=1, shuffle=False)
    batch = tf.train.shuffle_batch([q.dequeue()], batch_size=10, capacity=60,
                                   min_after_dequeue=40, seed=5,
                                   allow_smaller_final_batch=True)
    queue_op = [op for op in tf.get_default_graph().get_operations()
                if op.type == "RandomShuffleQueueV2"]
    assert len(queue_op) == 1 and queue_op[0].get_attr("min_after_dequeue") == 40
    batches, message = drain(batch)
    values = np.concatenate(batches)
    assert sorted(values.tolist()) == list(range(100))  # all of them, once
    assert not np.array_equal(values, np.arange(100))
    # the first batch waits for 50 (10 + 40 kept behind) and the queue holds 60 at most
    assert batches[0].max() < 60 and batches[0].max() >= 10
    assert "RandomShuffleQueue" in message


def test_random_shuffle_queue_seeded_order_repeats_across_sessions():
    queue = tf.RandomShuffleQueue(10, 0, [tf.int32], shapes=[[]], seed=7)
    fill, take = queue.enqueue_many([list(range(10))]), queue.dequeue_many(10)
    orders = []
    for _ in range(2):
        with tf.Session() as sess:
            sess.run(fill)
            orders.append(sess.run(take).tolist())
    assert orders[0] == orders[1] and sorted(orders[0]) == list(range(10))
    assert orders[0] != list(range(10))


def test_dequeue_up_to_on_a_closed_queue_gives_the_rest_then_out_of_range():
    queue = tf.FIFOQueue(10, [tf.float32], shapes=[[2]])
    fill = queue.enqueue_many([np.ones((3, 2), np.float32)])
    take = queue.dequeue_up_to(2)
    assert take.shape.as_list() == [None, 2]
    with tf.Session() as sess:
        sess.run(fill)
        sess.run(queue.close())
        assert sess.run(take).shape == (2, 2) and sess.run(take).shape == (1, 2)
        with pytest.raises(errors.OutOfRangeError, match=r"requested 2, current size 0"):
            sess.run(take)


def test_count_up_to_counts_then_fails_at_its_limit():
    v = tf.Variable(0, name="n")
    count = v.count_up_to(2)
    assert count.op.type == "CountUpTo" and count.op.get_attr("limit") == 2
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert [sess.run(count), sess.run(count)] == [0, 1]
        with pytest.raises(errors.OutOfRangeError, match="Reached limit of 2"):
            sess.run(count)
        assert sess.run(v) == 2
    with pytest.raises(TypeError, match="int32, int64"):
        tf.count_up_to(tf.Variable(0.0), 3)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="non-null input tensor"):
        tf.train.string_input_producer([])
    with pytest.raises(ValueError, match="num_epochs must be > 0 not 0"):
        tf.train.string_input_producer(["a"], num_epochs=0)
    with pytest.raises(ValueError, match="capacity 10 must be bigger than min_after_dequeue "
                                         "10"):
        tf.train.shuffle_batch([tf.constant(1)], 2, capacity=10, min_after_dequeue=10)
    with pytest.raises(ValueError, match="All shapes must be fully defined"):
        tf.train.batch([tf.placeholder(tf.float32, [None])], 2)
    with pytest.raises(ValueError, match="element_shape"):
        tf.train.input_producer(tf.placeholder(tf.float32, [None, None]))


def test_a_monitored_session_trains_until_the_input_runs_out():
    x = np.linspace(-1, 1, 64).astype(np.float32)
    ex, ey = tf.train.slice_input_producer([tf.constant(x), tf.constant(3 * x + 1)],
                                           num_epochs=30, seed=2)
    bx, by = tf.train.shuffle_batch([ex, ey], batch_size=16, capacity=64,
                                    min_after_dequeue=16, seed=3)
    w, b = tf.Variable(0.0), tf.Variable(0.0)
    loss = tf.reduce_mean(tf.square(bx * w + b - by))
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.3).minimize(loss, global_step=step)
    steps, learned = 0, None
    with tf.train.MonitoredTrainingSession(log_step_count_steps=None) as sess:
        while not sess.should_stop():  # the OutOfRangeError ends the loop and the session
            sess.run(train)
            steps, *learned = sess.run([step, w, b])
    assert steps == 64 * 30 // 16  # every example once per epoch, in full batches
    np.testing.assert_allclose(learned, [3.0, 1.0], atol=0.05)
