"""Every gradient test builds into a fresh default graph."""
import pytest

import nbcluster as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph
