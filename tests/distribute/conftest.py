"""Fixtures for ParameterServerStrategy tests: a ps/worker cluster of task processes."""
from __future__ import annotations

import pytest

import nbcluster as tf
from nbcluster.distribute.cluster_resolver import SimpleClusterResolver


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph


@pytest.fixture
def ps_cluster(cluster_factory):
    """1 ps + 2 workers, each a `python -m nbcluster.server` process."""
    return cluster_factory({"ps": 1, "worker": 2}, timeout=60)


@pytest.fixture
def strategy(ps_cluster):
    return tf.distribute.experimental.ParameterServerStrategy(
        SimpleClusterResolver(ps_cluster.spec, rpc_layer="grpc"))


@pytest.fixture
def coordinator(strategy):
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    yield coordinator
    coordinator.close()
