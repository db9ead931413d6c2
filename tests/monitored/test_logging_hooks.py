"""LoggingTensorHook (every N runs, at the end, a formatter) and StepCounterHook, through caplog."""
from __future__ import annotations

import logging
import re

import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)

LOGGER = "nbcluster.monitored.logging_hooks"


def _lines(caplog) -> list:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_tensors_are_logged_every_n_runs(quadratic, caplog):
    hook = tf.train.LoggingTensorHook({"loss": quadratic.loss, "step": quadratic.step},
                                      every_n_iter=2)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(5):
                sess.run(quadratic.train_op)
    lines = _lines(caplog)
    assert len(lines) == 3  # runs 0, 2 and 4
    # The loss logged is the one of the run it rode in: 25 * 0.64**run.
    for line, run in zip(lines, (0, 2, 4)):
        loss = float(re.search(r"loss = ([0-9.]+)", line).group(1))
        assert loss == pytest.approx(25.0 * 0.64 ** run, rel=1e-5), line
        assert re.search(r"step = \d+", line), line
    assert "sec)" not in lines[0] and re.search(r"\([0-9.]+ sec\)$", lines[1])


def test_a_list_of_tensors_is_tagged_by_name_and_logged_at_end(quadratic, caplog):
    hook = tf.train.LoggingTensorHook([quadratic.loss, "w:0"], at_end=True)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            sess.run(quadratic.train_op)
            assert _lines(caplog) == []  # only at the end
    assert len(_lines(caplog)) == 1
    line = _lines(caplog)[0]
    assert line.startswith("loss:0 = 16.0") and "w:0 = 4.0" in line, line


def test_a_formatter_writes_the_line(quadratic, caplog):
    # The loss, not w: the update depends on it, so it is read before the update.
    hook = tf.train.LoggingTensorHook({"loss": quadratic.loss}, every_n_iter=1,
                                      formatter=lambda values: f"loss is {values['loss']:.2f}")
    with caplog.at_level(logging.INFO, logger=LOGGER):
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            sess.run(quadratic.train_op)
            sess.run(quadratic.train_op)
    assert _lines(caplog) == ["loss is 25.00", "loss is 16.00"]


@pytest.mark.parametrize("kwargs", [{}, {"every_n_iter": 2, "every_n_secs": 1.0}])
def test_logging_wants_one_interval_or_at_end(quadratic, kwargs):
    with pytest.raises(ValueError, match="every_n_iter"):
        tf.train.LoggingTensorHook({"loss": quadratic.loss}, **kwargs)


def test_logging_refuses_a_bad_interval_and_a_bad_tensors_argument(quadratic):
    with pytest.raises(ValueError, match="every_steps must be positive, got 0"):
        tf.train.LoggingTensorHook({"loss": quadratic.loss}, every_n_iter=0)
    with pytest.raises(TypeError, match="'loss'"):
        tf.train.LoggingTensorHook("loss", every_n_iter=1)


def test_step_counter_logs_the_rate(quadratic, caplog):
    hook = tf.train.StepCounterHook(every_n_steps=2)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(10):
                sess.run(quadratic.train_op)
    rates = [float(m.group(1)) for line in _lines(caplog)
             if (m := re.fullmatch(r"global_step/sec: ([0-9.e+-]+)", line))]
    assert len(rates) >= 2 and all(r > 0 for r in rates)
    assert hook.last_rate == pytest.approx(rates[-1], rel=1e-5)


def test_every_n_secs_logs_when_the_time_has_passed(quadratic, caplog, monkeypatch):
    import nbcluster.monitored.timer as timer
    now = [500.0]
    monkeypatch.setattr(timer.time, "monotonic", lambda: now[0])
    hook = tf.train.LoggingTensorHook({"loss": quadratic.loss}, every_n_secs=10)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            for advance in (0, 4, 4, 4, 1):  # logs at runs 0 and 3 (12 s later)
                now[0] += advance
                sess.run(quadratic.train_op)
    lines = _lines(caplog)
    assert len(lines) == 2 and lines[1] == f"loss = {25.0 * 0.64 ** 3:.6g} (12.000 sec)"
