"""MonitoredSession: closing and __exit__, should_stop, recovery from a preempted run, the graph."""
from __future__ import annotations

import pytest

import nbcluster as tf
from nbcluster import errors

pytestmark = pytest.mark.timeout(60)


class Ends(tf.train.SessionRunHook):
    def __init__(self) -> None:
        self.ended = 0

    def end(self, session):
        self.ended += 1


def test_out_of_range_ends_the_loop_quietly_and_calls_end(fresh_graph):
    # No variables at all; three items, then the closed queue's dequeue raises
    # OutOfRangeError.
    queue = tf.FIFOQueue(10, [tf.float32])
    fill = [queue.enqueue([float(i)]) for i in range(3)]
    close = queue.close()
    item = queue.dequeue()
    hook = Ends()
    seen = []
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        sess.run(fill)
        sess.run(close)
        while not sess.should_stop():
            seen.append(float(sess.run(item)))
    assert sorted(seen) == [0.0, 1.0, 2.0]  # one run enqueued them, in any order
    assert hook.ended == 1 and sess.should_stop() and sess.raw_session() is None


def test_other_errors_propagate_and_skip_end(quadratic):
    hook = Ends()
    with pytest.raises(ZeroDivisionError):
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            sess.run(quadratic.train_op)
            1 / 0  # noqa: B018
    assert hook.ended == 0
    assert sess.raw_session() is None and sess.should_stop()


def test_close_ends_hooks_then_refuses_runs(quadratic):
    hook = Ends()
    sess = tf.train.MonitoredSession(hooks=[hook])
    raw = sess.raw_session()
    sess.run(quadratic.train_op)
    sess.close()
    assert hook.ended == 1 and sess.should_stop()
    with pytest.raises(RuntimeError, match="already closed"):
        sess.run(quadratic.train_op)
    with pytest.raises(RuntimeError, match="closed Session"):
        raw.run(quadratic.step)


def test_the_graph_is_finalized_while_open_and_editable_after(quadratic, fresh_graph):
    with tf.train.MonitoredSession() as sess:
        assert fresh_graph.finalized
        with pytest.raises(RuntimeError, match="finalized"):
            tf.constant(1.0)
        sess.run(quadratic.train_op)
    assert not fresh_graph.finalized
    tf.constant(1.0)


class PreemptOnce(tf.train.SessionRunHook):
    """Raises `error` from after_run at the given global step, once, as a
    restarted task would make the run fail."""

    def __init__(self, error, at_step: int) -> None:
        self.error, self.at_step, self.fired = error, at_step, False
        self.sessions, self.steps_at_create = [], []

    def begin(self):
        self.step = tf.train.get_global_step()

    def after_create_session(self, session, coord):
        self.sessions.append(session)
        self.steps_at_create.append(int(session.run(self.step)))

    def after_run(self, run_context, run_values):
        if not self.fired and int(run_context.session.run(self.step)) >= self.at_step:
            self.fired = True
            raise self.error


@pytest.mark.parametrize("error", [errors.AbortedError(None, None, "ps restarted"),
                                   errors.UnavailableError(None, None, "ps unreachable")])
def test_a_preempted_run_gets_a_new_session_restored_from_the_checkpoint(quadratic, tmp_path,
                                                                         error):
    hook = PreemptOnce(error, at_step=5)
    hooks = [hook, tf.train.StopAtStepHook(last_step=8)]
    runs = 0
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=hooks,
                                           save_checkpoint_steps=3) as sess:
        while not sess.should_stop():
            sess.run(quadratic.train_op)
            runs += 1
        final = int(sess.raw_session().run(quadratic.step))
    assert hook.fired and len(hook.sessions) == 2
    assert hook.sessions[0] is not hook.sessions[1]
    # The new in-process session restored step 3's checkpoint; the step that
    # failed at 5 ran again, as after a real restart the ps's state is lost.
    assert hook.steps_at_create == [0, 3]
    assert final == 8 and runs == 4 + (8 - 3)


def test_singular_monitored_session_does_not_recover(quadratic):
    hook = PreemptOnce(errors.AbortedError(None, None, "ps restarted"), at_step=1)
    with tf.train.SingularMonitoredSession(hooks=[hook]) as sess:
        with pytest.raises(errors.AbortedError, match="ps restarted"):
            sess.run(quadratic.train_op)
    assert len(hook.sessions) == 1


def test_other_op_errors_are_not_recovered(quadratic):
    hook = PreemptOnce(errors.InvalidArgumentError(None, None, "bad input"), at_step=1)
    with pytest.raises(errors.InvalidArgumentError):
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            sess.run(quadratic.train_op)
    assert len(hook.sessions) == 1


def test_a_session_creator_must_create_sessions(quadratic):
    with pytest.raises(TypeError, match="create_session.*'creator'"):
        tf.train.MonitoredSession(session_creator="creator")
