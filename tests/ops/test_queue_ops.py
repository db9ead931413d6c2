"""FIFOQueue: order, batching, blocking, closing and timeouts, as TF 1.x."""
import time

import numpy as np
import pytest
from op_checks import in_thread

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)


# -- building ----------------------------------------------------------------------
def test_queue_ops_names_and_types():
    q = tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[], [2]])
    assert q.name == "fifo_queue" and q.queue_ref.dtype == tf.resource
    assert q.dtypes == [tf.float32, tf.int32]
    assert [s.as_list() for s in q.shapes] == [[], [2]] and q.names is None
    assert q.enqueue([1.0, [1, 2]]).name == "fifo_queue_enqueue"
    assert q.enqueue_many([[1.0], [[1, 2]]]).name == "fifo_queue_EnqueueMany"
    x, y = q.dequeue()
    assert x.op.name == "fifo_queue_Dequeue" and x.dtype == tf.float32
    assert x.shape.as_list() == [] and y.shape.as_list() == [2]
    xs, ys = q.dequeue_many(3)  # a constant count fixes the batch dimension, as TF's
    assert xs.shape.as_list() == [3] and ys.shape.as_list() == [3, 2]
    n = tf.placeholder(tf.int32, [])
    assert q.dequeue_many(n)[1].shape.as_list() == [None, 2]
    size = q.size()
    assert size.op.name == "fifo_queue_Size" and size.dtype == tf.int32
    assert q.close().name == "fifo_queue_Close"
    assert tf.FIFOQueue(1, tf.float32).name == "fifo_queue_1"


def test_queue_ops_carry_tf_attrs_and_dequeues_read_shapes_from_the_queue():
    # TF's Enqueue ops have Tcomponents and its dequeues no shapes attr: a TF-built
    # GraphDef imported here once failed ("has no attr named 'shapes'")
    with tf.Graph().as_default() as g:
        q = tf.FIFOQueue(4, [tf.float32, tf.int32], shapes=[[2], []])
        enqueue = q.enqueue([[1.0, 2.0], 7])
        x, _ = q.dequeue()
        assert enqueue.get_attr("Tcomponents") == [tf.float32, tf.int32]
        assert x.op.get_attr("component_types") == [tf.float32, tf.int32]
        for op in (enqueue, x.op):
            assert "shapes" not in op.node_def.attr
        graph_def = g.as_graph_def()
    with tf.Graph().as_default() as imported:
        tf.import_graph_def(graph_def, name="")
        x = imported.get_tensor_by_name("fifo_queue_Dequeue:0")
        assert x.shape.as_list() == [2]
        with tf.Session() as sess:
            sess.run("fifo_queue_enqueue")
            got = sess.run(["fifo_queue_Dequeue:0", "fifo_queue_Dequeue:1"])
    assert got[0].tolist() == [1.0, 2.0] and got[1] == 7


def test_single_component_dequeue_is_a_tensor():
    q = tf.FIFOQueue(1, tf.float32)
    assert isinstance(q.dequeue(), tf.Tensor)


def test_build_time_checks():
    q = tf.FIFOQueue(10, [tf.float32], shapes=[[2]])
    with pytest.raises(ValueError):
        q.enqueue([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError):
        q.enqueue([1.0, 2.0])  # two components for a one-component queue? -> shape
    with pytest.raises(ValueError):
        q.enqueue(tf.constant([1, 2]))  # an int32 tensor for a float32 queue
    with pytest.raises(ValueError):
        tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[]])
    with pytest.raises(ValueError):
        q.enqueue({"a": [1.0, 2.0]})  # a dict needs a queue with names


# -- running -------------------------------------------------------------------------
def test_fifo_order_size_and_batches():
    q = tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[], []])
    x = tf.placeholder(tf.float32, [])
    enq = q.enqueue([x, 7])
    enq_many = q.enqueue_many([[4.0, 5.0, 6.0], [40, 50, 60]])
    deq = q.dequeue()
    deq2 = q.dequeue_many(2)
    size = q.size()
    with tf.Session() as sess:
        for v in (1.0, 2.0, 3.0):
            sess.run(enq, {x: v})
        sess.run(enq_many)
        assert sess.run(size) == 6
        a, b = sess.run(deq)
        assert (a, b) == (1.0, 7) and isinstance(a, np.float32) and isinstance(b, np.int32)
        xs, ys = sess.run(deq2)
        np.testing.assert_array_equal(xs, [2.0, 3.0])
        np.testing.assert_array_equal(ys, [7, 7])
        xs, ys = sess.run(deq2)
        np.testing.assert_array_equal(xs, [4.0, 5.0])
        np.testing.assert_array_equal(ys, [40, 50])
        assert sess.run(size) == 1


def test_values_are_converted_to_queue_dtypes():
    q = tf.FIFOQueue(5, [tf.float64, tf.int64, tf.string], shapes=[[], [], []])
    enq = q.enqueue([1, 2, "hi"])
    with tf.Session() as sess:
        sess.run(enq)
        a, b, c = sess.run(q.dequeue())
    assert a == 1.0 and a.dtype == np.float64 and b == 2 and b.dtype == np.int64
    assert c == b"hi"


def test_named_components():
    q = tf.FIFOQueue(5, [tf.float32, tf.int32], shapes=[[], []], names=["x", "y"])
    assert q.names == ["x", "y"]
    enq = q.enqueue({"x": 1.5, "y": 3})
    enq_many = q.enqueue_many({"x": [2.5, 3.5], "y": [4, 5]})
    out = q.dequeue()
    many = q.dequeue_many(2)
    assert set(out) == {"x", "y"} and out["y"].dtype == tf.int32
    with tf.Session() as sess:
        sess.run([enq])
        sess.run(enq_many)
        assert sess.run(out) == {"x": 1.5, "y": 3}
        got = sess.run(many)
        np.testing.assert_array_equal(got["x"], [2.5, 3.5])
        np.testing.assert_array_equal(got["y"], [4, 5])


def test_dequeue_many_needs_shapes():
    q = tf.FIFOQueue(5, tf.float32)
    enq = q.enqueue_many([[1.0, 2.0]])
    with tf.Session() as sess:
        sess.run(enq)
        with pytest.raises(tf.errors.InvalidArgumentError, match="specified shapes"):
            sess.run(q.dequeue_many(2))


def test_enqueue_checks_runtime_shape():
    q = tf.FIFOQueue(5, tf.float32, shapes=[[2]])
    p = tf.placeholder(tf.float32)
    enq = q.enqueue([p])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(enq, {p: [1.0, 2.0, 3.0]})
        sess.run(enq, {p: [1.0, 2.0]})
        assert sess.run(q.size()) == 1


# -- blocking -----------------------------------------------------------------------------
def test_blocked_dequeue_released_by_enqueue_from_another_thread():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    deq = q.dequeue()
    enq = q.enqueue([42.0])
    with tf.Session() as sess:
        thread, box = in_thread(lambda: sess.run(deq))
        time.sleep(0.2)
        assert thread.is_alive()  # nothing to dequeue yet
        sess.run(enq)
        thread.join(10)
        assert not thread.is_alive() and box == {"value": 42.0}


def test_blocked_dequeue_released_by_another_session(server):
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]], shared_name="cross_session_q")
    deq = q.dequeue()
    enq = q.enqueue([7.0])
    with tf.Session(server.target) as s1, tf.Session(server.target) as s2:
        thread, box = in_thread(lambda: s1.run(deq))
        time.sleep(0.2)
        assert thread.is_alive()
        s2.run(enq)
        thread.join(10)
        assert box == {"value": 7.0}


def test_capacity_blocks_enqueue_until_dequeue():
    q = tf.FIFOQueue(2, tf.int32, shapes=[[]])
    x = tf.placeholder(tf.int32, [])
    enq = q.enqueue([x])
    deq = q.dequeue()
    with tf.Session() as sess:
        sess.run(enq, {x: 1})
        sess.run(enq, {x: 2})
        thread, box = in_thread(lambda: sess.run(enq, {x: 3}))
        time.sleep(0.2)
        assert thread.is_alive()
        assert sess.run(q.size()) == 2
        assert sess.run(deq) == 1
        thread.join(10)
        assert not thread.is_alive() and "error" not in box
        assert [sess.run(deq) for _ in range(2)] == [2, 3]


def test_dequeue_timeout_is_deadline_exceeded():
    q = tf.FIFOQueue(2, tf.float32, shapes=[[]])
    deq = q.dequeue()
    options = tf.RunOptions(timeout_in_ms=200)
    with tf.Session() as sess:
        start = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(deq, options=options)
        assert time.monotonic() - start < 10
        # The queue still works after a timed-out step.
        sess.run(q.enqueue([1.0]))
        assert sess.run(deq) == 1.0


def test_enqueue_timeout_on_full_queue():
    q = tf.FIFOQueue(1, tf.float32, shapes=[[]])
    enq = q.enqueue([1.0])
    with tf.Session() as sess:
        sess.run(enq)
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(enq, options=tf.RunOptions(timeout_in_ms=200))


# -- closing -------------------------------------------------------------------------------
def test_close_then_drain_then_out_of_range():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    enq = q.enqueue_many([[1.0, 2.0, 3.0]])
    deq = q.dequeue()
    with tf.Session() as sess:
        sess.run(enq)
        sess.run(q.close())
        assert sess.run(deq) == 1.0
        with pytest.raises(tf.errors.OutOfRangeError, match="closed"):
            sess.run(q.dequeue_many(3))  # only two left
        assert [sess.run(deq) for _ in range(2)] == [2.0, 3.0]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(deq)


def test_enqueue_on_closed_queue_is_cancelled():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    enq = q.enqueue([1.0])
    with tf.Session() as sess:
        sess.run(q.close())
        with pytest.raises(tf.errors.CancelledError, match="closed"):
            sess.run(enq)


def test_close_wakes_a_blocked_dequeue():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    deq = q.dequeue()
    close = q.close()
    with tf.Session() as sess:
        thread, box = in_thread(lambda: sess.run(deq))
        time.sleep(0.2)
        sess.run(close)
        thread.join(10)
        assert isinstance(box.get("error"), tf.errors.OutOfRangeError)


def test_close_with_cancel_pending_enqueues():
    q = tf.FIFOQueue(1, tf.float32, shapes=[[]])
    enq = q.enqueue([1.0])
    with tf.Session() as sess:
        sess.run(enq)
        thread, box = in_thread(lambda: sess.run(enq))
        time.sleep(0.2)
        assert thread.is_alive()
        sess.run(q.close(cancel_pending_enqueues=True))
        thread.join(10)
        assert isinstance(box.get("error"), tf.errors.CancelledError)
        assert sess.run(q.dequeue()) == 1.0


def test_queue_state_is_private_per_in_process_session():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    enq = q.enqueue([1.0])
    size = q.size()
    with tf.Session() as s1, tf.Session() as s2:
        s1.run(enq)
        assert s1.run(size) == 1 and s2.run(size) == 0


def test_close_without_cancel_lets_pending_enqueue_finish():
    q = tf.FIFOQueue(1, tf.float32, shapes=[[]])
    x = tf.placeholder(tf.float32, [])
    enq = q.enqueue([x])
    deq = q.dequeue()
    with tf.Session() as sess:
        sess.run(enq, {x: 1.0})
        thread, box = in_thread(lambda: sess.run(enq, {x: 2.0}))
        time.sleep(0.2)
        sess.run(q.close())
        with pytest.raises(tf.errors.CancelledError):
            sess.run(enq, {x: 3.0})  # a new enqueue is refused at once
        assert sess.run(deq) == 1.0
        thread.join(10)
        assert not thread.is_alive() and "error" not in box
        assert sess.run(deq) == 2.0
