"""Fixtures for the tf.data tests: a fresh graph per test."""
import pytest

import nbcluster as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    """Every tf.data test builds into a new default graph."""
    with tf.Graph().as_default() as graph:
        yield graph
