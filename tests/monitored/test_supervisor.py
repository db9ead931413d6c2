"""tf.train.Supervisor in one process: default ops, restore, services, stop and bad checkpoints."""
from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.monitored.supervisor_threads import LooperThread, SVStepCounterThread

pytestmark = pytest.mark.timeout(60)


def service_threads() -> list:
    return [t for t in threading.enumerate() if isinstance(t, LooperThread) and t.is_alive()]


def accumulator(logdir):
    from tensorboard.backend.event_processing import event_accumulator
    acc = event_accumulator.EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    acc.Reload()
    return acc


def train(sv, quadratic, steps: int, master: str = "") -> float:
    with sv.managed_session(master) as sess:
        step = 0
        while not sv.should_stop() and step < steps:
            _, step = sess.run([quadratic.train_op, quadratic.step])
        return float(sess.run(quadratic.w))


def test_defaults_are_tfs(quadratic, tmp_path):
    tf.summary.scalar("loss", quadratic.loss)
    sv = tf.train.Supervisor(logdir=str(tmp_path))
    assert sv.is_chief and sv.logdir == str(tmp_path)
    assert sv.global_step is quadratic.step
    assert isinstance(sv.saver, tf.train.Saver)
    assert sv.summary_op.op.type == "MergeSummary"
    assert sv.save_path == os.path.join(str(tmp_path), "model.ckpt")
    assert (sv.save_model_secs, sv.save_summaries_secs) == (600, 120)
    assert sv.init_op is not None and sv.ready_op is not None and sv.local_init_op is not None
    assert tf.get_default_graph().finalized  # as TF's constructor leaves it
    assert tf.get_collection(tf.GraphKeys.READY_OP) == [sv.ready_op]
    sv.summary_writer.close()


def test_a_global_step_named_global_step_is_found_outside_the_collection():
    tf.Variable(np.int64(0), name="global_step", trainable=False)
    sv = tf.train.Supervisor(logdir=None)
    assert sv.global_step.name == "global_step:0" and sv.summary_writer is None


def test_the_chief_initializes_then_a_new_supervisor_restores(quadratic, tmp_path):
    # no checkpoint thread: its save could meet this explicit one on the same prefix
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=None)
    with sv.managed_session() as sess:
        assert float(sess.run(quadratic.w)) == 5.0
        for _ in range(3):
            sess.run(quadratic.train_op)
        sv.saver.save(sess, sv.save_path, global_step=quadratic.step)
        trained = float(sess.run(quadratic.w))
    assert not service_threads()
    names = set(os.listdir(tmp_path))
    assert {"checkpoint", "graph.pbtxt", "model.ckpt-3.index"} <= names
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        w = tf.Variable(np.float32(5.0), name="w")
        sv2 = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0)
        with sv2.managed_session() as sess:
            assert (float(sess.run(w)), int(sess.run(step))) == (pytest.approx(trained), 3)


def test_services_write_checkpoints_summaries_and_the_graph(quadratic, tmp_path):
    tf.summary.scalar("weight", quadratic.w)
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=30, save_summaries_secs=30)
    train(sv, quadratic, 5)
    # both services run once at start (global step 0), as TF's LooperThreads do
    assert "model.ckpt-0.index" in os.listdir(tmp_path)
    acc = accumulator(tmp_path)
    assert [(e.step, e.value) for e in acc.Scalars("weight")] == [(0, 5.0)]
    assert any(n.name == "w" for n in acc.Graph().node)


def test_step_counter_writes_steps_per_second(quadratic, tmp_path):
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_summaries_secs=None, save_model_secs=None)
    with sv.managed_session() as sess:
        counter = SVStepCounterThread(sv, sess)  # its loop body, called here in turn
        counter.start_loop()
        for _ in range(4):
            sess.run(quadratic.train_op)
        counter.run_loop()
        counter.run_loop()  # no step since: nothing to rate, nothing written
    (event,) = accumulator(tmp_path).Scalars("global_step/sec")
    assert event.step == 4 and event.value > 0


def test_summary_computed_writes_at_the_global_step(quadratic, tmp_path):
    s = tf.summary.scalar("objective", quadratic.loss, collections=[])
    sv = tf.train.Supervisor(logdir=str(tmp_path), summary_op=None, save_model_secs=None)
    with sv.managed_session() as sess:
        sess.run(quadratic.train_op)
        sv.summary_computed(sess, sess.run(s))
        sv.summary_computed(sess, sess.run(s), global_step=10)
    assert [e.step for e in accumulator(tmp_path).Scalars("objective")] == [1, 10]
    with tf.Graph().as_default():
        tf.Variable(1.0)
        worker = tf.train.Supervisor(is_chief=False, logdir=str(tmp_path))
        with pytest.raises(RuntimeError, match="requires a summary writer"):
            worker.summary_computed(None, b"")
        with pytest.raises(RuntimeError, match="Only chief"):
            worker.start_standard_services(None)


def test_an_error_in_the_loop_stops_every_thread_and_is_raised(quadratic, tmp_path):
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0.05,
                             save_summaries_secs=0.05)
    with pytest.raises(ZeroDivisionError):
        with sv.managed_session() as sess:
            assert service_threads()
            sess.run(quadratic.train_op)
            1 / 0  # noqa: B018
    assert not service_threads()
    assert sv.should_stop()


def test_out_of_range_ends_training_cleanly(quadratic, tmp_path):
    sv = tf.train.Supervisor(logdir=str(tmp_path))
    with sv.managed_session():
        raise tf.errors.OutOfRangeError(None, None, "input exhausted")
    assert not service_threads()


def test_a_failing_service_stops_training_and_stop_raises_its_error(quadratic, tmp_path):
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=None)

    def fail():
        raise tf.errors.UnavailableError(None, None, "ps went away")

    with pytest.raises(tf.errors.UnavailableError, match="ps went away"):
        with sv.managed_session():
            sv.loop(0.01, fail)
            sv.wait_for_stop()
    assert not service_threads()


def test_restoring_a_missing_checkpoint_names_it_and_leaves_no_thread(quadratic, tmp_path):
    tf.train.update_checkpoint_state(str(tmp_path), str(tmp_path / "model.ckpt-7"))
    sv = tf.train.Supervisor(logdir=str(tmp_path))
    with pytest.raises(ValueError, match="not a valid checkpoint: .*model.ckpt-7"):
        with sv.managed_session():
            pass
    assert not service_threads()


def test_restoring_a_corrupt_checkpoint_is_data_loss_naming_it(quadratic, tmp_path):
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=None)
    with sv.managed_session() as sess:
        sv.saver.save(sess, sv.save_path, global_step=quadratic.step)
    (tmp_path / "model.ckpt-0.index").write_text("not an index")
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        tf.Variable(np.float32(5.0), name="w")
        sv2 = tf.train.Supervisor(logdir=str(tmp_path))
        with pytest.raises(tf.errors.DataLossError, match="model.ckpt-0.index"):
            with sv2.managed_session():
                pass
    assert not service_threads()


def test_a_non_chief_waits_for_the_chief_then_runs_local_init(tmp_path):
    server = tf.train.Server.create_local_server()
    try:
        def model():
            w = tf.Variable(np.float32(3.0), name="shared_w")
            counter = tf.Variable(np.int32(0), name="local_counter",
                                  collections=[tf.GraphKeys.LOCAL_VARIABLES])
            return w, counter

        got = {}
        worker_graph = tf.Graph()
        with worker_graph.as_default():
            w, counter = model()
            worker = tf.train.Supervisor(is_chief=False, recovery_wait_secs=0.05)

        def run_worker():
            with worker_graph.as_default():
                sess = worker.prepare_or_wait_for_session(server.target)
                got["values"] = sess.run([w, counter])
                sess.close()

        thread = threading.Thread(target=run_worker)
        thread.start()
        thread.join(0.3)
        assert thread.is_alive() and "values" not in got  # still waiting
        with tf.Graph().as_default():
            model()
            chief = tf.train.Supervisor(logdir=str(tmp_path / "chief"))
            with chief.managed_session(server.target):
                thread.join(30)
        assert got["values"] == [3.0, 0]
    finally:
        server.stop()


def test_a_non_chief_gives_up_after_max_wait_secs_naming_what_is_missing():
    server = tf.train.Server.create_local_server()
    try:
        tf.Variable(1.0, name="never_initialized")
        sm = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables(),
                                     recovery_wait_secs=0.05)
        with pytest.raises(tf.errors.DeadlineExceededError, match="never_initialized"):
            sm.wait_for_session(server.target, max_wait_secs=0.2)
    finally:
        server.stop()


def test_looper_thread_calls_its_target_until_the_stop():
    coord = tf.train.Coordinator()
    calls = []
    looper = tf.train.LooperThread.loop(coord, None, calls.append, args=(1,))
    while len(calls) < 3:
        pass
    coord.request_stop()
    coord.join([looper], stop_grace_period_secs=10)
    assert not looper.is_alive()


def new_runner_threads(before: set) -> list:
    """The live queue-runner threads started since `before` was taken."""
    return [t for t in threading.enumerate()
            if t not in before and "runner" in t.name and t.is_alive()]


def test_queue_runners_start_with_the_session_and_end_with_it(tmp_path):
    queue = tf.FIFOQueue(2, tf.float32)
    counter = tf.Variable(0.0, name="counter")
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [queue.enqueue(
        counter.assign_add(1.0))]))
    taken = queue.dequeue()
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=None,
                             save_summaries_secs=None)
    before = set(threading.enumerate())  # other tests' threads may be named "runner" too
    with sv.managed_session() as sess:
        got = [float(sess.run(taken)) for _ in range(3)]
        runners = new_runner_threads(before)
        assert runners  # and now blocked in an enqueue on the full queue
    assert got == [1.0, 2.0, 3.0]
    assert not any(t.is_alive() for t in runners)


def test_stop_ends_a_queue_runner_blocked_in_its_step(tmp_path):
    # Without managed_session, as TF's mnist_replica calls sv.stop(): there the
    # sync-replicas chief runner (on a dummy queue) is blocked in a take, which
    # cancelling its queue does not free; here, in a dequeue from another queue
    # nothing fills, entered once its step has counted itself.
    empty, dummy = tf.FIFOQueue(1, tf.float32), tf.FIFOQueue(1, tf.int32)
    entered = tf.Variable(0.0, name="entered")
    with tf.control_dependencies([entered.assign_add(1.0)]):
        stuck = empty.dequeue()
    tf.train.add_queue_runner(tf.train.QueueRunner(dummy, [stuck]))
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=None,
                             save_summaries_secs=None)  # stop_grace_secs: TF's 120
    before = set(threading.enumerate())
    sess = sv.prepare_or_wait_for_session()
    while float(sess.run(entered)) < 1.0:  # the runner is inside its step
        pass
    runners = new_runner_threads(before)
    assert runners
    sv.stop()
    assert not any(t.is_alive() for t in runners)
