"""ConditionalAccumulator: averaging, stale gradients, blocking takes and build checks, as TF."""
import time

import numpy as np
import pytest
from op_checks import in_thread

import nbcluster as tf
from nbcluster.grad import gradient_table

pytestmark = pytest.mark.timeout(60)


def _feedable(shape=(2,), dtype=tf.float32, **kwargs):
    acc = tf.ConditionalAccumulator(dtype, shape=shape, **kwargs)
    grad = tf.placeholder(dtype, shape)
    step = tf.placeholder(tf.int64, [])
    return acc, grad, step, acc.apply_grad(grad, local_step=step)


# -- building ------------------------------------------------------------------------
def test_ops_names_types_and_attrs():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2, 3], shared_name="acc")
    ref = acc.accumulator_ref
    assert acc.name == "conditional_accumulator" and ref.dtype == tf.resource
    # TF 2.x's op types (its tf.compat.v1.ConditionalAccumulator builds these)
    assert ref.op.type == "ResourceConditionalAccumulator" and acc.dtype == tf.float32
    assert ref.op.get_attr("shared_name") == "acc"
    assert ref.op.get_attr("reduction_type") == "MEAN"
    assert ref.op.get_attr("shape").as_list() == [2, 3]
    apply = acc.apply_grad(np.ones([2, 3], np.float32), local_step=3)
    assert apply.type == "ResourceAccumulatorApplyGradient"
    assert [t.dtype for t in apply.inputs] == [tf.resource, tf.int64, tf.float32]
    take = acc.take_grad(2)
    assert take.op.type == "ResourceAccumulatorTakeGradient" and take.dtype == tf.float32
    assert take.shape.as_list() == [2, 3] and take.op.inputs[1].dtype == tf.int32
    count = acc.num_accumulated()
    assert count.op.type == "ResourceAccumulatorNumAccumulated" and count.dtype == tf.int32
    assert count.op.name == "conditional_accumulator_NumAccumulated"
    assert acc.set_global_step(4).type == "ResourceAccumulatorSetGlobalStep"


def test_no_gradient_flows_through_accumulator_ops():
    for op_type in ("ConditionalAccumulator", "AccumulatorApplyGradient",
                    "AccumulatorTakeGradient", "AccumulatorNumAccumulated",
                    "AccumulatorSetGlobalStep"):
        for prefix in ("", "Resource"):
            assert gradient_table.is_declared(prefix + op_type)
            assert gradient_table.get_gradient_rule(prefix + op_type) is None


def test_build_time_shape_and_dtype_errors_name_the_values():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
    with pytest.raises(ValueError, match=r"\(3,\)|\[3\]"):
        acc.apply_grad([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="int32"):
        acc.apply_grad(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="float32"):
        acc.apply_grad([1.0, 2.0], local_step=tf.constant(1.5))
    with pytest.raises(TypeError, match="string"):
        tf.ConditionalAccumulator(tf.string)
    with pytest.raises(ValueError, match="'MAX'"):
        tf.ConditionalAccumulator(tf.float32, reduction_type="MAX")


# -- running -------------------------------------------------------------------------
def test_take_returns_the_mean_and_resets():
    acc, grad, step, apply = _feedable()
    take, count = acc.take_grad(2), acc.num_accumulated()
    with tf.Session() as sess:
        sess.run(apply, {grad: [1.0, 3.0], step: 0})
        sess.run(apply, {grad: [3.0, 7.0], step: 0})
        sess.run(apply, {grad: [2.0, 2.0], step: 0})
        assert sess.run(count) == 3
        # More than num_required arrived: the mean of all of them, as TF.
        out = sess.run(take)
        np.testing.assert_allclose(out, [2.0, 4.0])
        assert out.dtype == np.float32
        assert sess.run(count) == 0


def test_sum_reduction():
    acc, grad, step, apply = _feedable(reduction_type="SUM")
    with tf.Session() as sess:
        sess.run(apply, {grad: [1.0, 3.0], step: 0})
        sess.run(apply, {grad: [3.0, 7.0], step: 0})
        np.testing.assert_allclose(sess.run(acc.take_grad(2)), [4.0, 10.0])


def test_stale_gradients_are_dropped():
    acc, grad, step, apply = _feedable()
    take, count = acc.take_grad(1), acc.num_accumulated()
    new_step = tf.placeholder(tf.int64, [])
    set_step = acc.set_global_step(new_step)
    with tf.Session() as sess:
        sess.run(apply, {grad: [1.0, 1.0], step: 0})
        sess.run(take)  # the accumulator's step is now 1
        sess.run(apply, {grad: [5.0, 5.0], step: 0})
        assert sess.run(count) == 0
        sess.run(set_step, {new_step: 10})
        sess.run(apply, {grad: [5.0, 5.0], step: 9})
        assert sess.run(count) == 0
        sess.run(apply, {grad: [4.0, 6.0], step: 10})
        sess.run(apply, {grad: [8.0, 8.0], step: 12})  # newer than the accumulator: kept
        assert sess.run(count) == 2
        np.testing.assert_allclose(sess.run(take), [6.0, 7.0])


def test_take_blocks_until_enough_gradients():
    acc, grad, step, apply = _feedable()
    take = acc.take_grad(2)
    with tf.Session() as sess:
        sess.run(apply, {grad: [1.0, 1.0], step: 0})
        thread, box = in_thread(lambda: sess.run(take))
        time.sleep(0.3)
        assert thread.is_alive() and box == {}
        sess.run(apply, {grad: [3.0, 5.0], step: 0})
        thread.join(10)
        assert not thread.is_alive()
        np.testing.assert_allclose(box["value"], [2.0, 3.0])


def test_take_timeout_is_deadline_exceeded_and_leaves_the_gradients():
    acc, grad, step, apply = _feedable()
    take, count = acc.take_grad(2), acc.num_accumulated()
    with tf.Session() as sess:
        sess.run(apply, {grad: [1.0, 1.0], step: 0})
        start = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(take, options=tf.RunOptions(timeout_in_ms=200))
        assert time.monotonic() - start < 10
        # The timed-out take is gone: the next gradients serve a new take.
        assert sess.run(count) == 1
        sess.run(apply, {grad: [3.0, 3.0], step: 0})
        np.testing.assert_allclose(sess.run(take), [2.0, 2.0])


def test_blocked_take_is_cancelled_when_its_session_closes(server):
    acc = tf.ConditionalAccumulator(tf.float32, shape=[1], shared_name="closing_acc")
    take = acc.take_grad(1)
    sess = tf.Session(server.target)
    thread, box = in_thread(lambda: sess.run(take))
    time.sleep(0.3)
    assert thread.is_alive()
    sess.close()
    thread.join(10)
    assert not thread.is_alive()
    assert isinstance(box.get("error"), tf.errors.CancelledError)


def test_shared_across_sessions_on_a_server(server):
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="shared_acc")
    apply = acc.apply_grad([2.0, 4.0])
    take = acc.take_grad(2)
    with tf.Session(server.target) as s1, tf.Session(server.target) as s2:
        s1.run(apply)
        s2.run(apply)
        np.testing.assert_allclose(s1.run(take), [2.0, 4.0])


def test_run_time_shape_errors_name_the_shapes():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[None])
    grad = tf.placeholder(tf.float32, [None])
    apply = acc.apply_grad(grad)
    with tf.Session() as sess:
        sess.run(apply, {grad: [1.0, 2.0]})
        # The first gradient fixed the length at 2.
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[3\].*\[2\]"):
            sess.run(apply, {grad: [1.0, 2.0, 3.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="num_required must be "
                                                                   "positive, but was 0"):
            sess.run(acc.take_grad(0))


def test_tf1_ref_handle_ops_of_older_graphs_still_run():
    # GraphDefs TF 1.x wrote name the ops without "Resource"; both kinds share kernels
    g = tf.get_default_graph()
    acc = g.create_op("ConditionalAccumulator", [], {
        "dtype": tf.float32, "shape": tf.TensorShape([2]), "container": "",
        "shared_name": "", "reduction_type": "MEAN"}, name="old").outputs[0]
    steps = tf.constant(0, tf.int64)
    applies = [g.create_op("AccumulatorApplyGradient", [acc, steps, tf.constant(v)],
                           {"dtype": tf.float32}) for v in ([1.0, 2.0], [3.0, 6.0])]
    count = g.create_op("AccumulatorNumAccumulated", [acc], {}).outputs[0]
    take = g.create_op("AccumulatorTakeGradient", [acc, tf.constant(2)],
                       {"dtype": tf.float32}).outputs[0]
    with tf.Session() as sess:
        sess.run(applies)
        assert sess.run(count) == 2
        assert sess.run(take).tolist() == [2.0, 4.0]
