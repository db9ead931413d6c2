"""Hooks around MonitoredSession.run: call order, one merged Session.run, feeds, bad hooks."""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.client.session import Session

pytestmark = pytest.mark.timeout(60)


class Recorder(tf.train.SessionRunHook):
    """Records each call as (name, event); asks for `fetches` in before_run."""

    def __init__(self, name: str, log: list, fetches=None, feed_dict=None) -> None:
        self.name, self.log, self.fetches, self.feed_dict = name, log, fetches, feed_dict
        self.results = []

    def begin(self):
        self.log.append((self.name, "begin"))

    def after_create_session(self, session, coord):
        assert isinstance(session, Session) and not coord.should_stop()
        self.log.append((self.name, "after_create_session"))

    def before_run(self, run_context):
        self.log.append((self.name, "before_run"))
        if self.fetches is None and self.feed_dict is None:
            return None
        return tf.train.SessionRunArgs(self.fetches, self.feed_dict)

    def after_run(self, run_context, run_values):
        self.log.append((self.name, "after_run"))
        self.results.append(run_values.results)

    def end(self, session):
        self.log.append((self.name, "end"))


def test_hooks_are_called_in_order_around_each_run(quadratic):
    log: list = []
    hooks = [Recorder("a", log), Recorder("b", log)]
    with tf.train.MonitoredSession(hooks=hooks) as sess:
        assert log == [("a", "begin"), ("b", "begin"), ("a", "after_create_session"),
                       ("b", "after_create_session")]
        del log[:]
        sess.run(quadratic.train_op)
        assert log == [("a", "before_run"), ("b", "before_run"), ("a", "after_run"),
                       ("b", "after_run")]
        del log[:]
    assert log == [("a", "end"), ("b", "end")]


def test_hook_fetches_ride_in_the_callers_single_run(quadratic, monkeypatch):
    calls = []
    real_run = Session.run

    def counting_run(self, fetches, *args, **kwargs):
        calls.append(fetches)
        return real_run(self, fetches, *args, **kwargs)

    log: list = []
    by_dict = Recorder("dict", log, fetches={"w": quadratic.w, "loss": quadratic.loss})
    by_tensor = Recorder("step", log, fetches=quadratic.step)
    silent = Recorder("silent", log)
    with tf.train.MonitoredSession(hooks=[by_dict, silent, by_tensor]) as sess:
        monkeypatch.setattr(Session, "run", counting_run)
        result = sess.run([quadratic.loss, quadratic.train_op])
        monkeypatch.undo()
    assert len(calls) == 1  # the caller's and both hooks' fetches: one Session.run
    assert result[0] == pytest.approx(25.0) and result[1] is None
    assert by_dict.results[0]["loss"] == pytest.approx(25.0)
    assert set(by_dict.results[0]) == {"w", "loss"}
    assert silent.results == [None]
    assert by_tensor.results[0] in (0, 1)  # read in the same step as the increment


def test_a_hook_feeds_the_run(fresh_graph):
    x = tf.placeholder(tf.float32, [], name="x")
    y = x * 2.0
    nothing = tf.no_op()
    hook = Recorder("feeder", [], fetches=y, feed_dict={x: 21.0})
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        assert sess.run(nothing) is None
    assert hook.results == [pytest.approx(42.0)]


def test_a_tensor_fed_by_a_hook_and_the_caller_is_refused(fresh_graph):
    x = tf.placeholder(tf.float32, [], name="x")
    hook = Recorder("feeder", [], fetches=x, feed_dict={x: 1.0})
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        with pytest.raises(RuntimeError, match="'x:0'"):
            sess.run(x, feed_dict={x: 2.0})


def test_bad_hooks_are_named(quadratic):
    with pytest.raises(TypeError, match="'not a hook'"):
        tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(last_step=1), "not a hook"])
    with pytest.raises(TypeError, match="single hook"):
        tf.train.MonitoredTrainingSession(hooks=tf.train.StopAtStepHook(last_step=1))
    with pytest.raises(TypeError, match="42"):
        tf.train.MonitoredTrainingSession(chief_only_hooks=[42])


def test_before_run_must_return_session_run_args(quadratic):
    class Wrong(tf.train.SessionRunHook):
        def before_run(self, run_context):
            return [quadratic.loss]

    with tf.train.MonitoredSession(hooks=[Wrong()]) as sess:
        with pytest.raises(TypeError, match="Wrong.*SessionRunArgs"):
            sess.run(quadratic.train_op)


def test_request_stop_ends_the_loop_after_that_run(quadratic):
    class StopAfterThree(tf.train.SessionRunHook):
        def after_run(self, run_context, run_values):
            self.runs = getattr(self, "runs", 0) + 1
            assert run_context.original_args.fetches is quadratic.train_op
            if self.runs == 3:
                run_context.request_stop()
                assert run_context.stop_requested

    runs = 0
    with tf.train.MonitoredSession(hooks=[StopAfterThree()]) as sess:
        while not sess.should_stop():
            sess.run(quadratic.train_op)
            runs += 1
        with pytest.raises(RuntimeError, match="should_stop"):
            sess.run(quadratic.train_op)
        assert sess.raw_session().run(quadratic.step) == 3
        np.testing.assert_allclose(sess.raw_session().run(quadratic.w), 5.0 * 0.8 ** 3,
                                   rtol=1e-6)
    assert runs == 3


def test_a_hooks_run_options_are_merged_and_its_metadata_filled(quadratic):
    class Trace(tf.train.SessionRunHook):
        def before_run(self, run_context):
            return tf.train.SessionRunArgs(
                quadratic.loss, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))

        def after_run(self, run_context, run_values):
            self.values = run_values

    hook = Trace()
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        sess.run(quadratic.train_op, options=tf.RunOptions(timeout_in_ms=60000))
    assert hook.values.options.trace_level == tf.RunOptions.FULL_TRACE
    assert hook.values.options.timeout_in_ms == 60000  # the caller's, kept
    assert hook.values.results == pytest.approx(25.0)
    assert len(hook.values.run_metadata.step_stats.dev_stats) >= 1
