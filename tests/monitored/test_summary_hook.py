"""Summaries in the MonitoredSession family: SummarySaverHook, StepCounterHook's rate, the
graph from CheckpointSaverHook, MonitoredTrainingSession's defaults; read back as TensorBoard
and tf.train.summary_iterator read them."""
from __future__ import annotations

import glob
import os

import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)


def events(logdir) -> list:
    return [e for path in sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")))
            for e in tf.train.summary_iterator(path)]


def scalars(logdir, tag: str) -> list:
    return [(e.step, v.simple_value) for e in events(logdir) for v in e.summary.value
            if v.tag == tag]


def test_summary_saver_hook_writes_every_n_steps_with_the_train_step(quadratic, tmp_path):
    tf.summary.scalar("objective", quadratic.loss)
    hook = tf.train.SummarySaverHook(save_steps=2, output_dir=str(tmp_path),
                                     summary_op=tf.summary.merge_all())
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        for _ in range(5):
            sess.run(quadratic.train_op)
    got = scalars(tmp_path, "objective")
    # written at the step after each run that fetched it: 1, 3, 5; the loss before that run
    assert [s for s, _ in got] == [1, 3, 5]
    assert got[0][1] == pytest.approx(25.0) and got[1][1] < got[0][1]
    logs = [e.session_log.status for e in events(tmp_path) if e.HasField("session_log")]
    assert logs == [tf.summary.SessionLog.START]


def test_summary_saver_hook_needs_exactly_one_source():
    with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
        tf.train.SummarySaverHook(save_steps=1, output_dir="/tmp/unused")


def test_monitored_training_session_writes_summaries_rate_and_graph(quadratic, tmp_path):
    tf.summary.scalar("objective", quadratic.loss)
    hooks = [tf.train.StopAtStepHook(last_step=6)]
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=hooks,
                                           save_summaries_steps=3,
                                           log_step_count_steps=2) as sess:
        while not sess.should_stop():
            sess.run(quadratic.train_op)
    steps = [s for s, _ in scalars(tmp_path, "objective")]
    # every 3 steps; the global step fetched with the train op may already
    # count that run (as in TF), which can bring the next summary one step early
    assert steps[0] == 1 and steps[-1] <= 6 and all(b - a in (2, 3)
                                                    for a, b in zip(steps, steps[1:])), steps
    rates = scalars(tmp_path, "global_step/sec")
    assert rates and all(r > 0 for _, r in rates)
    assert (tmp_path / "graph.pbtxt").is_file()
    from tensorboard.backend.event_processing import event_accumulator
    acc = event_accumulator.EventAccumulator(str(tmp_path))
    acc.Reload()
    assert {n.name for n in acc.Graph().node} >= {"w", "loss", "objective"}


def test_summary_dir_overrides_the_checkpoint_dir(quadratic, tmp_path):
    tf.summary.scalar("objective", quadratic.loss)
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path / "ckpt"),
                                           summary_dir=str(tmp_path / "tb"),
                                           hooks=[tf.train.StopAtStepHook(last_step=2)]) as sess:
        while not sess.should_stop():
            sess.run(quadratic.train_op)
    assert scalars(tmp_path / "tb", "objective") == [(1, 25.0)]
    assert not scalars(tmp_path / "ckpt", "objective")


def test_scaffold_summary_op_defaults_to_merge_all(quadratic):
    tf.summary.scalar("objective", quadratic.loss)
    scaffold = tf.train.Scaffold().finalize()
    assert scaffold.summary_op.op.type == "MergeSummary"
    assert tf.get_collection("summary_op") == [scaffold.summary_op]


def test_summary_iterator_of_a_missing_file_is_not_found(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="nothing-here"):
        list(tf.train.summary_iterator(str(tmp_path / "nothing-here")))
