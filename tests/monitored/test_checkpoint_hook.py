"""CheckpointSaverHook: checkpoints at session start, every N steps, at the end; resuming."""
from __future__ import annotations

import os

import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)


def _run_to(quadratic, checkpoint_dir: str, last_step: int, **kwargs) -> list:
    """Trains with a MonitoredTrainingSession until last_step; the global steps seen."""
    steps = []
    hooks = [tf.train.StopAtStepHook(last_step=last_step)]
    with tf.train.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, hooks=hooks,
                                           **kwargs) as sess:
        steps.append(int(sess.raw_session().run(quadratic.step)))
        while not sess.should_stop():
            sess.run(quadratic.train_op)
        steps.append(int(sess.raw_session().run(quadratic.step)))
    return steps


def _checkpoint_steps(directory) -> list:
    state = tf.train.get_checkpoint_state(str(directory))
    return sorted(int(p.rsplit("-", 1)[1]) for p in state.all_model_checkpoint_paths)


def test_checkpoints_every_n_steps_and_at_the_end(quadratic, tmp_path):
    assert _run_to(quadratic, str(tmp_path), 7, save_checkpoint_steps=3) == [0, 7]
    assert _checkpoint_steps(tmp_path) == [0, 3, 6, 7]
    latest = tf.train.latest_checkpoint(str(tmp_path))
    assert latest == os.path.join(str(tmp_path), "model.ckpt-7")
    assert os.path.isfile(latest + ".index")
    for step in (0, 3, 6, 7):
        assert tf.train.checkpoint_exists(os.path.join(str(tmp_path), f"model.ckpt-{step}"))


def test_a_second_training_session_resumes_from_the_checkpoint(quadratic, tmp_path):
    _run_to(quadratic, str(tmp_path), 4, save_checkpoint_steps=10)
    assert _checkpoint_steps(tmp_path) == [0, 4]
    # A fresh in-process session holds nothing: the values come from the checkpoint.
    hooks = [tf.train.StopAtStepHook(last_step=6)]
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=hooks,
                                           save_checkpoint_steps=10) as sess:
        raw = sess.raw_session()
        assert raw.run(quadratic.step) == 4
        np.testing.assert_allclose(raw.run(quadratic.w), 5.0 * 0.8 ** 4, rtol=1e-6)
        runs = 0
        while not sess.should_stop():
            sess.run(quadratic.train_op)
            runs += 1
        np.testing.assert_allclose(raw.run(quadratic.w), 5.0 * 0.8 ** 6, rtol=1e-6)
    assert runs == 2
    assert _checkpoint_steps(tmp_path) == [0, 4, 6]


def test_save_checkpoint_secs_none_disables_saving(quadratic, tmp_path):
    _run_to(quadratic, str(tmp_path), 3, save_checkpoint_secs=None)
    assert tf.train.latest_checkpoint(str(tmp_path)) is None


def test_the_hook_alone_saves_with_its_own_saver(quadratic, tmp_path):
    hook = tf.train.CheckpointSaverHook(str(tmp_path / "new_dir"), save_steps=2,
                                        checkpoint_basename="m")
    with tf.train.MonitoredSession(hooks=[hook, tf.train.StopAtStepHook(last_step=5)]) as sess:
        while not sess.should_stop():
            sess.run(quadratic.train_op)
    assert hook.saved_steps == [0, 2, 4, 5]
    assert tf.train.latest_checkpoint(str(tmp_path / "new_dir")).endswith("m-5")


def test_save_secs_saves_when_the_time_has_passed(quadratic, tmp_path, monkeypatch):
    import nbcluster.monitored.timer as timer
    now = [1000.0]
    monkeypatch.setattr(timer.time, "monotonic", lambda: now[0])
    hook = tf.train.CheckpointSaverHook(str(tmp_path), save_secs=60)
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        sess.run(quadratic.train_op)
        now[0] += 59
        sess.run(quadratic.train_op)
        now[0] += 2
        sess.run(quadratic.train_op)
        sess.run(quadratic.train_op)
    assert hook.saved_steps == [0, 3, 4]


def test_bad_arguments_are_refused(quadratic, tmp_path):
    with pytest.raises(ValueError, match="every_secs"):
        tf.train.CheckpointSaverHook(str(tmp_path))
    with pytest.raises(ValueError, match="both saver"):
        tf.train.CheckpointSaverHook(str(tmp_path), save_steps=1, saver=tf.train.Saver(),
                                     scaffold=tf.train.Scaffold())
    with pytest.raises(ValueError, match="not both"):
        tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_secs=5,
                                          save_checkpoint_steps=5)
