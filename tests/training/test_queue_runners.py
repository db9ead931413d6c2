"""Input threads: tf.train.Coordinator, QueueRunner / add_queue_runner /
start_queue_runners, and a MonitoredTrainingSession that starts and ends them."""
import threading

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph


def test_join_raises_the_first_requested_exception_once_threads_end():
    coord = tf.train.Coordinator()
    done = threading.Event()

    def worker():
        with coord.stop_on_exception():
            done.wait(5)
            raise ValueError("input broke")
    thread = threading.Thread(target=worker)
    thread.start()
    assert not coord.should_stop()
    done.set()
    with pytest.raises(ValueError, match="input broke"):
        coord.join([thread])
    assert coord.joined and not thread.is_alive()
    coord.request_stop(KeyError("second"))  # the first one stays the one raised
    with pytest.raises(ValueError):
        coord.raise_requested_exception()
    coord.clear_stop()
    assert not coord.should_stop()
    coord.request_stop(errors.OutOfRangeError(None, None, "end of input"))  # a clean stop
    coord.join([])


def test_join_names_threads_that_outlive_the_grace_period():
    coord, release = tf.train.Coordinator(), threading.Event()
    stuck = threading.Thread(target=release.wait, name="stuck-reader")
    coord.register_thread(stuck)
    stuck.start()
    coord.request_stop()
    try:
        with pytest.raises(RuntimeError, match="stuck-reader"):
            coord.join(stop_grace_period_secs=0.2)
        coord.join(stop_grace_period_secs=0.1, ignore_live_threads=True)
    finally:
        release.set()
        stuck.join()


def _input_pipeline(capacity: int = 32):
    """A queue of [x, y] pairs filled by two runner threads: y = 2x + 1 exactly."""
    queue = tf.FIFOQueue(capacity, [tf.float32, tf.float32], shapes=[[1], [1]])
    x = tf.random_uniform([1], -1.0, 1.0)
    enqueue = queue.enqueue([x, 2.0 * x + 1.0])
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue] * 2))
    return queue


def test_runner_threads_fill_a_queue_until_the_coordinator_stops_them():
    queue = _input_pipeline()
    xs, ys = queue.dequeue_many(8)
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord=coord)
        # two loops, and (as TF) a thread that cancels the queue once the coordinator stops
        assert len(threads) == 3 and all(t.is_alive() for t in threads)
        for _ in range(5):
            bx, by = sess.run([xs, ys])
            np.testing.assert_allclose(by, 2 * bx + 1, rtol=1e-6)
        coord.request_stop()  # the cancel wakes the enqueues blocked on the full queue
        coord.join(threads, stop_grace_period_secs=10)
    assert not any(t.is_alive() for t in threads)


def test_a_failing_runner_stops_everyone_and_join_raises_its_error():
    queue = tf.FIFOQueue(4, [tf.float32], shapes=[[]])
    bad = queue.enqueue([tf.gather(tf.constant([1.0, 2.0]), 5)])  # index out of range
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [bad]))
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord=coord)
        assert coord.wait_for_stop(10)
        with pytest.raises(errors.InvalidArgumentError, match="5"):
            coord.join(threads)


def test_start_queue_runners_needs_a_session():
    with pytest.raises(ValueError, match="no default session"):
        tf.train.start_queue_runners()
    with pytest.raises(TypeError, match="QueueRunner"):
        tf.train.add_queue_runner("not a runner")


def test_a_monitored_session_starts_the_graphs_runners_and_ends_them():
    queue = _input_pipeline()
    xs, ys = queue.dequeue_many(16)
    w = tf.Variable([0.0])
    b = tf.Variable([0.0])
    step = tf.train.get_or_create_global_step()
    loss = tf.reduce_mean(tf.square(xs * w + b - ys))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=step)
    hooks = [tf.train.StopAtStepHook(last_step=150)]
    with tf.train.MonitoredTrainingSession(hooks=hooks, log_step_count_steps=None) as sess:
        while not sess.should_stop():
            sess.run(train)
        learned = sess.raw_session().run([w, b])
    np.testing.assert_allclose(np.concatenate(learned), [2.0, 1.0], atol=0.05)
    # closing cancelled the runners' blocked enqueues: their threads are gone
    runners = [t.name for t in threading.enumerate() if "-runner-" in t.name]
    assert runners == []
