"""RegisterGraph honours create_worker_session_called: a restarted task that no
longer knows the session answers AbortedError (the master then recreates it),
not InvalidArgumentError about devices it never had."""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.distributed.master import Master
from nbcluster.distributed.worker import Worker
from nbcluster.runtime.devices import local_devices

pytestmark = pytest.mark.timeout(120)

W0 = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
TWICE = np.array([[2.0, 0.0], [0.0, 2.0]], np.float32)


def _graph():
    """w on the ps, y = x @ w on the worker (renamed tasks of a cluster_def)."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(W0, name="w")
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [2, 2], name="x")
            tf.matmul(x, w, name="y")
    return g, w


def _config(worker_address: str, ps_address: str) -> tf.ConfigProto:
    spec = tf.train.ClusterSpec({"worker": [worker_address], "ps": [ps_address]})
    return tf.ConfigProto(cluster_def=spec.as_cluster_def())


def _constant_nodes(device: str) -> list:
    g = tf.Graph()
    with g.as_default(), tf.device(device):
        tf.constant(1.0, name="c")
    return [op.to_node() for op in g.get_operations()]


def test_unknown_session_is_aborted_only_when_the_master_created_it():
    worker = Worker("localhost", 0, local_devices("localhost", 0))
    nodes = _constant_nodes("/job:localhost/replica:0/task:0/device:CPU:0")
    with pytest.raises(errors.AbortedError, match="'gone'.*restarted"):
        worker.register_graph("gone", nodes, 0, create_worker_session_called=True)
    # A caller that never creates worker sessions (TF's legacy flow) gets the
    # worker's own session, as before.
    assert worker.register_graph("legacy", nodes, 0)
    worker.create_worker_session("made", False)
    assert worker.register_graph("made", nodes, 0, create_worker_session_called=True)


def test_never_planned_step_after_a_renamed_task_restarts_in_process():
    workers: dict = {}

    class Client:  # as the gRPC client: RegisterGraph says the session was created
        def __init__(self, address):
            self.address = address

        def register_graph(self, session_handle, nodes, parallelism):
            return workers[self.address].register_graph(session_handle, nodes, parallelism,
                                                        create_worker_session_called=True)

        def __getattr__(self, name):
            return getattr(workers[self.address], name)

    def start(address):
        workers[address] = Worker("localhost", 0, local_devices("localhost", 0),
                                  connect=Client)
    for address in ("localhost:1", "localhost:2"):
        start(address)

    class Cache:
        def tasks(self):
            return [("localhost", 0)]

        def get(self, job, task):
            return Client("localhost:1")

    master = Master(("localhost", 0), Cache(), connect=Client)
    g, w = _graph()
    nodes = [op.to_node() for op in g.get_operations()]
    handle, _ = master.create_session(nodes, _config("localhost:1", "localhost:2"),
                                      "grpc://localhost:1")
    master.run_step(handle, {}, [], [w.initializer.name])
    np.testing.assert_allclose(master.run_step(handle, {"x:0": TWICE}, ["y:0"], [])[0][0],
                               TWICE @ W0)
    start("localhost:2")  # the ps restarts: new incarnation, no sessions, no state
    with pytest.raises(errors.AbortedError):
        master.run_step(handle, {}, ["w:0"], [])  # a signature never planned before
    master.run_step(handle, {}, [], [w.initializer.name])
    np.testing.assert_allclose(master.run_step(handle, {}, ["w:0"], [])[0][0], W0)


def test_never_planned_step_after_a_renamed_task_process_restarts(cluster_factory):
    c0, c1 = cluster_factory({"localhost": 1}), cluster_factory({"localhost": 1})
    target = c0.target("localhost", 0)
    config = _config(target[len("grpc://"):], c1.spec.task_address("localhost", 0))
    g, w = _graph()
    with g.as_default(), tf.Session(target, config=config) as sess:
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run("y:0", {"x:0": TWICE}), TWICE @ W0)
        c1.restart("localhost", 0)
        with pytest.raises(errors.AbortedError):
            sess.run(w)  # never planned: RegisterGraph on the new process
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run(w), W0)
