"""Fixtures for the op tests that run graphs on a server."""
import pytest

import nbcluster as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    """Every op test builds into a new default graph (names start afresh)."""
    with tf.Graph().as_default() as graph:
        yield graph


@pytest.fixture(scope="module")
def server():
    """One in-process server per module: state on it outlives a session."""
    server = tf.train.Server.create_local_server()
    yield server
    server.stop()
