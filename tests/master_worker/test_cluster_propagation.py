"""ClusterSpec propagation onto renamed tasks, TF's most common pattern:
servers started with no knowledge of each other (each thinks it is
/job:localhost/task:0), and a session whose ConfigProto.cluster_def names
them /job:worker/task:0 and /job:ps/task:0.

The master sends each worker the session's ServerDef in CreateWorkerSession;
the worker runs that session's graphs on its devices renamed, with isolated
state unless `share_session_state_in_clusterspec_propagation`, and finds its
peers by the session cluster's addresses. Tiers: servers in this process
(master -> the other worker and worker <-> worker over real gRPC), then
each task a `python -m nbcluster.server` process.
"""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.master_worker.master import Master
from nbcluster.master_worker.worker import Worker
from nbcluster.runtime.devices import local_devices

pytestmark = pytest.mark.timeout(60)

W0 = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
TWICE = np.array([[2.0, 0.0], [0.0, 2.0]], np.float32)
PS = "/job:ps/replica:0/task:0/device:CPU:0"
WORKER = "/job:worker/replica:0/task:0/device:CPU:0"


def _graph(ps: str = "/job:ps/task:0", worker: str = "/job:worker/task:0"):
    """w on the ps, y = x @ w on the worker, `set` writes y back into w (so a
    tensor crosses each way)."""
    g = tf.Graph()
    with g.as_default():
        with tf.device(ps):
            w = tf.Variable(W0, name="w")
        with tf.device(worker):
            x = tf.placeholder(tf.float32, [2, 2], name="x")
            y = tf.matmul(x, w, name="y")
        tf.assign(w, y, name="set")  # colocated with w: on the ps
    return g, w


def _config(worker_address: str, ps_address: str, share: bool = False) -> tf.ConfigProto:
    spec = tf.train.ClusterSpec({"worker": [worker_address], "ps": [ps_address]})
    config = tf.ConfigProto(cluster_def=spec.as_cluster_def())
    config.experimental.share_session_state_in_clusterspec_propagation = share
    return config


def _address(target: str) -> str:
    return target[len("grpc://"):]


def _devices_of(metadata) -> dict:
    return {n.node_name: d.device for d in metadata.step_stats.dev_stats for n in d.node_stats}


def _trace() -> tuple:
    return tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), tf.RunMetadata()


def _check_step(sess, w) -> None:
    """One traced step: values and the renamed canonical device names."""
    options, meta = _trace()
    np.testing.assert_allclose(sess.run("y:0", {"x:0": TWICE}, options=options,
                                        run_metadata=meta), TWICE @ W0)
    options, meta_set = _trace()
    sess.run("set", {"x:0": TWICE}, options=options, run_metadata=meta_set)
    where = _devices_of(meta_set)
    assert where["y"] == WORKER and where["w"] == PS and where["set"] == PS
    for m in (meta, meta_set):
        assert {d.device for d in m.step_stats.dev_stats} == {PS, WORKER}
    np.testing.assert_allclose(sess.run(w), TWICE @ W0)


# -- servers in this process -----------------------------------------------------------

@pytest.fixture
def local_servers():
    servers = [tf.train.Server.create_local_server() for _ in range(2)]
    yield servers
    for server in servers:
        server.stop()


def test_renamed_tasks_run_a_graph_across_both(local_servers):
    s0, s1 = local_servers
    config = _config(_address(s0.target), _address(s1.target))
    g, w = _graph()
    with g.as_default(), tf.Session(s0.target, config=config) as sess:
        names = sorted(d.name for d in sess.list_devices())
        assert names == [PS, WORKER]
        sess.run(w.initializer)
        _check_step(sess, w)
    # Neither server's own state was touched: the session's state was its own.
    assert s0._worker.resources.containers() == []
    assert s1._worker.resources.containers() == []


def test_propagated_state_is_isolated_from_plain_and_other_sessions(local_servers):
    s0, s1 = local_servers
    config = _config(_address(s0.target), _address(s1.target))
    g, w = _graph()
    plain_g, plain_w = _graph("/job:localhost/task:0", "/job:localhost/task:0")
    with plain_g.as_default(), tf.Session(s1.target) as plain:
        plain.run(plain_w.initializer)
        plain.run("set", {"x:0": 3 * TWICE})  # the server's own "w": 6 * W0
    with g.as_default(), tf.Session(s0.target, config=config) as a, \
            tf.Session(s0.target, config=config) as b:
        with pytest.raises(errors.FailedPreconditionError):
            a.run(w)  # not the server's own w
        a.run(w.initializer)
        a.run("set", {"x:0": TWICE})
        with pytest.raises(errors.FailedPreconditionError):
            b.run(w)  # nor another propagated session's
        b.run(w.initializer)
        np.testing.assert_allclose(a.run(w), TWICE @ W0)
        np.testing.assert_allclose(b.run(w), W0)
    with plain_g.as_default(), tf.Session(s1.target) as plain:
        np.testing.assert_allclose(plain.run(plain_w), 6 * W0)


def test_shared_state_when_the_session_asks_for_it(local_servers):
    s0, s1 = local_servers
    config = _config(_address(s0.target), _address(s1.target), share=True)
    g, w = _graph()
    with g.as_default():
        with tf.Session(s0.target, config=config) as a:
            a.run(w.initializer)
            a.run("set", {"x:0": TWICE})
        with tf.Session(s0.target, config=config) as b:
            np.testing.assert_allclose(b.run(w), TWICE @ W0)
    # Shared means the worker's own state, which its plain sessions use too.
    plain_g, plain_w = _graph("/job:localhost/task:0", "/job:localhost/task:0")
    with plain_g.as_default(), tf.Session(s1.target) as plain:
        np.testing.assert_allclose(plain.run(plain_w), TWICE @ W0)
    with g.as_default(), tf.Session(s0.target, config=_config(
            _address(s0.target), _address(s1.target))) as isolated:
        with pytest.raises(errors.FailedPreconditionError):
            isolated.run(w)


def test_a_closed_session_frees_its_worker_sessions(local_servers):
    s0, s1 = local_servers
    config = _config(_address(s0.target), _address(s1.target))
    g, w = _graph()
    with g.as_default(), tf.Session(s0.target, config=config) as sess:
        sess.run(w.initializer)
        assert len(s1._worker._sessions) == 1
    assert s0._worker._sessions == {} and s1._worker._sessions == {}


# -- the worker alone ------------------------------------------------------------------

def test_worker_session_renames_devices_and_checks_its_server_def():
    worker = Worker("localhost", 0, local_devices("localhost", 0, {"CPU": 2}))
    spec = ClusterSpec({"worker": ["a:1"], "ps": ["b:2"]})
    server_def = tf.train.ServerDef(cluster=spec.as_cluster_def(), job_name="ps",
                                    task_index=0, protocol="grpc")
    worker.create_worker_session("s", True, server_def)
    session = worker._sessions["s"]
    assert session.task == ("ps", 0)
    assert sorted(session.devices) == [PS, "/job:ps/replica:0/task:0/device:CPU:1"]
    assert {d.incarnation for d in session.devices.values()} == {worker.incarnation}
    bad = tf.train.ServerDef(cluster=spec.as_cluster_def(), job_name="chief", task_index=0)
    with pytest.raises(errors.InvalidArgumentError, match="/job:chief/task:0"):
        worker.create_worker_session("t", True, bad)
    node = tf.Graph()
    with node.as_default():
        with tf.device(WORKER):
            tf.constant(1.0, name="c")
    with pytest.raises(errors.InvalidArgumentError, match="under the session's name"):
        worker.register_graph("s", [op.to_node() for op in node.get_operations()])


class _RenamedInProcess:
    """Two in-process workers at localhost:1 (the master's) and localhost:2 (the
    ps), both booted as /job:localhost/task:0, and a propagated session on them."""

    def __init__(self) -> None:
        self.workers: dict = {}
        for address in ("localhost:1", "localhost:2"):
            self.restart(address)
        client = self._client

        class Cache:
            def tasks(self):
                return [("localhost", 0)]

            def get(self, job, task):
                return client("localhost:1")

        self.master = Master(("localhost", 0), Cache(), connect=client)
        g, self.w = _graph()
        nodes = [op.to_node() for op in g.get_operations()]
        self.handle, _ = self.master.create_session(
            nodes, _config("localhost:1", "localhost:2"), "grpc://localhost:1")
        self.run([], [self.w.initializer.name])

    def _client(self, address: str):
        workers = self.workers

        class Client:  # as the gRPC client: RegisterGraph says the session was created
            needs_cleanup = False

            def register_graph(self, session_handle, nodes, parallelism):
                return workers[address].register_graph(session_handle, nodes, parallelism,
                                                       create_worker_session_called=True)

            def __getattr__(self, name):
                return getattr(workers[address], name)
        return Client()

    def restart(self, address: str) -> None:
        """A new incarnation at `address`: no sessions, no state."""
        self.workers[address] = Worker("localhost", 0, local_devices("localhost", 0),
                                       connect=self._client)

    def run(self, fetches: list, targets: list = (), feeds: dict = None):
        return self.master.run_step(self.handle, feeds or {}, fetches, list(targets))


def test_restart_of_a_renamed_task_aborts_then_recovers_in_process():
    pair = _RenamedInProcess()
    x = {"x:0": TWICE}
    np.testing.assert_allclose(pair.run(["y:0"], feeds=x)[0][0], TWICE @ W0)
    pair.restart("localhost:2")  # the ps
    with pytest.raises(errors.AbortedError):
        pair.run(["y:0"], feeds=x)
    pair.run([], [pair.w.initializer.name])
    np.testing.assert_allclose(pair.run(["y:0"], feeds=x)[0][0], TWICE @ W0)


def test_never_planned_step_after_a_renamed_task_restarts_in_process():
    """RegisterGraph honours create_worker_session_called: the restarted ps no
    longer knows the session and says AbortedError (the master then recreates
    it), not InvalidArgumentError about devices it never had."""
    pair = _RenamedInProcess()
    np.testing.assert_allclose(pair.run(["y:0"], feeds={"x:0": TWICE})[0][0], TWICE @ W0)
    pair.restart("localhost:2")
    with pytest.raises(errors.AbortedError):
        pair.run(["w:0"])  # a signature never planned before
    pair.run([], [pair.w.initializer.name])
    np.testing.assert_allclose(pair.run(["w:0"])[0][0], W0)


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


def _two_processes(cluster_factory) -> tuple:
    """Two `python -m nbcluster.server` processes, each its own one-task
    cluster {"localhost": ["127.0.0.1:PORT"]}."""
    return cluster_factory({"localhost": 1}), cluster_factory({"localhost": 1})


def _process_config(c0, c1, share: bool = False) -> tf.ConfigProto:
    # The master's task must be written as its target is; the other as any
    # address that reaches it.
    return _config(_address(c0.target("localhost", 0)),
                   c1.spec.task_address("localhost", 0), share)


@pytest.mark.timeout(120)
def test_processes_renamed_tasks_with_isolated_or_shared_state(cluster_factory):
    c0, c1 = _two_processes(cluster_factory)
    target = c0.target("localhost", 0)
    config = _process_config(c0, c1)
    g, w = _graph()
    with g.as_default():
        with tf.Session(target, config=config) as a, tf.Session(target, config=config) as b:
            assert sorted(d.name for d in a.list_devices()) == [PS, WORKER]
            a.run(w.initializer)
            _check_step(a, w)
            with pytest.raises(errors.FailedPreconditionError):
                b.run(w)
        shared = _process_config(c0, c1, share=True)
        with tf.Session(target, config=shared) as a:
            a.run(w.initializer)
            a.run("set", {"x:0": 2 * TWICE})
        with tf.Session(target, config=shared) as b:
            np.testing.assert_allclose(b.run(w), 4 * W0)
    plain_g, plain_w = _graph("/job:localhost/task:0", "/job:localhost/task:0")
    with plain_g.as_default(), tf.Session(c1.target("localhost", 0)) as plain:
        np.testing.assert_allclose(plain.run(plain_w), 4 * W0)  # the shared state
    with plain_g.as_default(), tf.Session(target) as plain:
        with pytest.raises(errors.FailedPreconditionError):
            plain.run(plain_w)  # the isolated sessions left nothing on the worker


@pytest.mark.timeout(120)
@pytest.mark.parametrize("planned", [True, False], ids=["planned_step", "never_planned_step"])
def test_processes_restarted_renamed_task_aborts_then_the_next_run_replans(cluster_factory,
                                                                           planned):
    """A step planned before the restart, or one never planned (its RegisterGraph
    reaches the new process, which no longer knows the session): AbortedError."""
    c0, c1 = _two_processes(cluster_factory)
    g, w = _graph()
    with g.as_default(), tf.Session(c0.target("localhost", 0),
                                    config=_process_config(c0, c1)) as sess:
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run("y:0", {"x:0": TWICE}), TWICE @ W0)
        c1.restart("localhost", 0)
        with pytest.raises(errors.AbortedError):
            sess.run("y:0", {"x:0": TWICE}) if planned else sess.run(w)
        sess.run(w.initializer)  # the restarted task lost its variables, as in TF
        _check_step(sess, w)
