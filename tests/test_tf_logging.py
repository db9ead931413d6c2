"""tf.logging: TF1's calls reach the "tensorflow" logger at the levels TF uses."""
import logging

import pytest

import nbcluster as tf


@pytest.fixture
def records(caplog):
    logger = tf.logging.get_logger()
    logger.addHandler(caplog.handler)
    old = logger.level
    yield caplog
    logger.removeHandler(caplog.handler)
    logger.setLevel(old)


def test_verbosity_filters_levels(records):
    tf.logging.set_verbosity(tf.logging.WARN)
    tf.logging.info("hidden %d", 1)
    tf.logging.warn("shown %d", 2)
    tf.logging.set_verbosity(tf.logging.INFO)
    tf.logging.info("step %d: loss %.2f", 3, 0.5)
    assert [(r.levelno, r.getMessage()) for r in records.records] == [
        (logging.WARNING, "shown 2"), (logging.INFO, "step 3: loss 0.50")]
    assert tf.logging.get_verbosity() == tf.logging.INFO
    assert all(r.name == "tensorflow" for r in records.records)


def test_every_n_and_first_n_count_per_call_site(records):
    tf.logging.set_verbosity(tf.logging.INFO)
    for i in range(7):
        tf.logging.log_every_n(tf.logging.INFO, "every %d", 3, i)
    for i in range(5):
        tf.logging.log_first_n(tf.logging.INFO, "first %d", 2, i)
    tf.logging.log_if(tf.logging.INFO, "never", False)
    assert [r.getMessage() for r in records.records] == ["every 0", "every 3", "every 6",
                                                 "first 0", "first 1"]
