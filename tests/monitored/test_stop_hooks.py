"""StopAtStepHook (num_steps, last_step, bad arguments) and NanTensorHook."""
from __future__ import annotations

import logging

import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)


def _train_until_stopped(sess, train_op, limit: int = 100) -> int:
    runs = 0
    while not sess.should_stop():
        sess.run(train_op)
        runs += 1
        assert runs < limit, "the hook never requested a stop"
    return runs


def test_last_step_stops_at_that_global_step(quadratic):
    hook = tf.train.StopAtStepHook(last_step=7)
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        assert _train_until_stopped(sess, quadratic.train_op) == 7
        assert sess.raw_session().run(quadratic.step) == 7


def test_num_steps_counts_from_the_step_at_session_creation(quadratic, tmp_path):
    # First reach step 4 (checkpointed at the end); then 3 more steps from there.
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                           hooks=[tf.train.StopAtStepHook(last_step=4)]) as sess:
        _train_until_stopped(sess, quadratic.train_op)
    hook = tf.train.StopAtStepHook(num_steps=3)
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=[hook]) as sess:
        assert sess.raw_session().run(quadratic.step) == 4
        assert _train_until_stopped(sess, quadratic.train_op) == 3
        assert sess.raw_session().run(quadratic.step) == 7
    assert hook.last_step == 7


def test_an_already_reached_last_step_stops_after_one_run(quadratic):
    with tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(last_step=0)]) as sess:
        assert _train_until_stopped(sess, quadratic.train_op) == 1


@pytest.mark.parametrize("kwargs", [{}, {"num_steps": 3, "last_step": 5}])
def test_stop_at_step_wants_exactly_one_argument(kwargs):
    with pytest.raises(ValueError, match="Exactly one of num_steps or last_step"):
        tf.train.StopAtStepHook(**kwargs)


def test_stop_at_step_refuses_a_negative_or_fractional_step():
    with pytest.raises(ValueError, match="-2"):
        tf.train.StopAtStepHook(num_steps=-2)
    with pytest.raises(ValueError, match="2.5"):
        tf.train.StopAtStepHook(last_step=2.5)


def test_stop_at_step_needs_a_global_step(fresh_graph):
    tf.Variable(1.0, name="v")
    with pytest.raises(RuntimeError, match="Global step should be created to use StopAtStepHook"):
        tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(last_step=3)])


def _diverging():
    x = tf.placeholder(tf.float32, [], name="x")
    loss = tf.log(x, name="loss")  # log of a negative number: NaN
    return x, loss, tf.no_op()


def test_nan_loss_raises(fresh_graph, caplog):
    x, loss, step = _diverging()
    with tf.train.MonitoredSession(hooks=[tf.train.NanTensorHook(loss)]) as sess:
        sess.run(step, {x: 2.0})
        with pytest.raises(tf.train.NanLossDuringTrainingError, match="NaN loss during training"):
            sess.run(step, {x: -1.0})


def test_nan_loss_can_request_a_stop_instead(fresh_graph, caplog):
    x, loss, step = _diverging()
    hook = tf.train.NanTensorHook(loss, fail_on_nan_loss=False)
    with caplog.at_level(logging.ERROR, logger="nbcluster.monitored"):
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            sess.run(step, {x: 2.0})
            assert not sess.should_stop()
            sess.run(step, {x: -1.0})
            assert sess.should_stop()
    assert "Model diverged with loss = NaN" in caplog.text
