"""Fixtures for the monitored-session tests: a fresh default graph, a tiny trainable model."""
from __future__ import annotations

import types

import numpy as np
import pytest

import nbcluster as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    """Every test builds into a new default graph (names start afresh)."""
    with tf.Graph().as_default() as graph:
        yield graph


@pytest.fixture(autouse=True)
def fresh_writer_cache():
    """The summary writers the hooks opened (one per directory) are closed after each test."""
    yield
    tf.summary.FileWriterCache.clear()


@pytest.fixture
def quadratic():
    """w starts at 5 and gradient descent on w**2 (lr 0.1) scales it by 0.8 a step;
    the train op increments the global step."""
    step = tf.train.get_or_create_global_step()
    w = tf.Variable(np.float32(5.0), name="w")
    loss = tf.square(w, name="loss")
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return types.SimpleNamespace(step=step, w=w, loss=loss, train_op=train_op)
