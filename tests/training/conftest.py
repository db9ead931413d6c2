"""Fixtures for the training tests: a fresh default graph per test."""
import pytest

import nbcluster as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    """Every test builds into a new default graph (names start afresh)."""
    with tf.Graph().as_default() as graph:
        yield graph
