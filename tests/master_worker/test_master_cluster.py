"""The master on a cluster of tasks: ClusterSpec propagation (a session's own
cluster_def), device filters, lazy device discovery with bounded timeouts,
restarted tasks, device names, and Reset across tasks.

Most tests run over the in-process transport (a dict of workers by
address); a few start real servers in this process and cross gRPC between
them (the master reaches the other task with GrpcWorkerClient).
"""
from __future__ import annotations

import contextlib
import socket
import time
from collections import Counter

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.framework.device_spec import DeviceSpec
from nbcluster.launch import free_ports
from nbcluster.master_worker.master import Master
from nbcluster.master_worker.placement import place
from nbcluster.master_worker.session_cluster import intersects, match_target
from nbcluster.master_worker.worker import Worker
from nbcluster.proto import config_pb2
from nbcluster.runtime.devices import local_devices
from nbcluster.runtime.kernel_table import has_kernel

pytestmark = pytest.mark.timeout(60)

FULL_TRACE = config_pb2.RunOptions(trace_level=config_pb2.RunOptions.FULL_TRACE)


class Network:
    """Workers by address. A client looks its worker up on every call, so a
    restarted task is simply a new Worker at the same address."""

    def __init__(self) -> None:
        self.workers: dict = {}
        self.names: dict = {}
        self.status_calls: Counter = Counter()

    def start(self, address: str, job: str, task: int, cpus: int = 1) -> Worker:
        devices = local_devices(job, task, {"CPU": cpus})
        worker = self.workers[address] = Worker(job, task, devices, peers=self.peer,
                                                connect=self.connect)
        self.names[(job, task)] = address
        return worker

    def stop(self, address: str) -> None:
        del self.workers[address]

    def peer(self, job: str, task: int):
        return self.connect(self.names[(job, task)])

    def connect(self, address: str):
        return _Client(self, address)

    def cache(self, spec: dict) -> "_Cache":
        return _Cache(self, ClusterSpec(spec))


class _Client:
    needs_cleanup = False  # as our gRPC client to one of our tasks

    def __init__(self, net: Network, address: str) -> None:
        self._net, self._address = net, address

    def __getattr__(self, name: str):
        worker = self._net.workers.get(self._address)
        if worker is None:
            def refused(*args, **kwargs):
                raise errors.UnavailableError(None, None, f"failed to connect to all "
                                                          f"addresses (target {self._address})")
            return refused
        if name == "get_status":
            self._net.status_calls[self._address] += 1
        return getattr(worker, name)


class _Cache:
    """The server's own cluster, as a WorkerCache."""

    def __init__(self, net: Network, spec: ClusterSpec) -> None:
        self.net, self.spec = net, spec

    def tasks(self) -> list:
        return [(j, t) for j in self.spec.jobs for t in self.spec.task_indices(j)]

    def get(self, job: str, task: int):
        return self.net.connect(self.spec.task_address(job, task))


def _net(spec: dict, cpus: int = 1) -> Network:
    net = Network()
    for job, addresses in spec.items():
        for task, address in enumerate(addresses):
            net.start(address, job, task, cpus)
    return net


def _create(master: Master, graph, config=None, target=None) -> str:
    nodes = [op.to_node() for op in graph.get_operations()]
    return master.create_session(nodes, config, target)[0]


def _cluster_config(spec: dict, **kwargs) -> config_pb2.ConfigProto:
    return config_pb2.ConfigProto(cluster_def=ClusterSpec(spec).as_cluster_def(), **kwargs)


def _devices_of(metadata) -> dict:
    return {n.node_name: d.device for d in metadata.step_stats.dev_stats for n in d.node_stats}


# -- 1. ClusterSpec propagation ------------------------------------------------------

TWO = {"worker": ["localhost:5000", "localhost:5001"]}


def test_target_is_matched_exactly_as_tf_does():
    spec = ClusterSpec({"ps": ["localhost:5002"], **TWO})
    assert match_target(spec, "grpc://localhost:5001") == ("worker", 1)
    assert match_target(spec, "localhost:5002") == ("ps", 0)
    with pytest.raises(errors.InvalidArgumentError) as info:
        match_target(spec, "grpc://127.0.0.1:5001")   # TF compares the strings
    assert "127.0.0.1:5001" in str(info.value) and "localhost:5001" in str(info.value)
    twice = ClusterSpec({"a": ["localhost:5000"], "b": ["localhost:5000"]})
    with pytest.raises(errors.InvalidArgumentError, match="multiple") as info:
        match_target(twice, "grpc://localhost:5000")
    assert "/job:a/" in str(info.value) and "/job:b/" in str(info.value)


def test_create_session_refuses_a_cluster_without_the_target():
    net = _net({"worker": ["localhost:5000"]})
    master = Master(("worker", 0), net.cache({"worker": ["localhost:5000"]}),
                    connect=net.connect)
    with tf.Graph().as_default() as g:
        tf.constant(1.0, name="c")
    config = _cluster_config({"worker": ["127.0.0.1:5000"]})
    with pytest.raises(errors.InvalidArgumentError) as info:
        _create(master, g, config, target="grpc://localhost:5000")
    assert "grpc://localhost:5000" in str(info.value) and "127.0.0.1:5000" in str(info.value)
    with pytest.raises(errors.InvalidArgumentError, match="target"):
        _create(master, g, config, target=None)


def test_a_session_runs_on_its_own_cluster():
    # The server's cluster is itself alone; the session brings a second task.
    net = _net(TWO)
    master = Master(("worker", 0), net.cache({"worker": ["localhost:5000"]}),
                    connect=net.connect)
    with tf.Graph().as_default() as g:
        with tf.device("/job:worker/task:1"):
            x = tf.constant([1.0, 2.0], name="x")
            y = tf.multiply(x, 3.0, name="y")
        tf.add(y, 1.0, name="z")
    handle = _create(master, g, _cluster_config(TWO), target="grpc://localhost:5000")
    values, metadata = master.run_step(handle, {}, ["z:0"], [], FULL_TRACE)
    np.testing.assert_allclose(values[0], [4.0, 7.0])
    where = _devices_of(metadata)
    assert where["y"] == "/job:worker/replica:0/task:1/device:CPU:0"
    assert where["z"] == "/job:worker/replica:0/task:0/device:CPU:0"
    # The server's own sessions still see only the server's cluster.
    assert [d.name for d in master.list_devices()] == \
        ["/job:worker/replica:0/task:0/device:CPU:0"]
    assert len(master.list_devices(handle)) == 2


def _variable_graph():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:worker/task:1"):
            v = tf.Variable(0.0, name="v")
            value = tf.placeholder(tf.float32, [], name="value")
            tf.assign(v, value, name="set")
    return g, v


def test_propagated_sessions_have_isolated_state_unless_shared():
    net = _net(TWO)
    master = Master(("worker", 0), net.cache({"worker": ["localhost:5000"]}),
                    connect=net.connect)
    g, v = _variable_graph()
    target = "grpc://localhost:5000"
    a = _create(master, g, _cluster_config(TWO), target)
    b = _create(master, g, _cluster_config(TWO), target)
    for handle, value in ((a, 5.0), (b, 7.0)):
        master.run_step(handle, {}, [], [v.initializer.name])
        master.run_step(handle, {"value:0": np.float32(value)}, [], ["set"])
    assert float(master.run_step(a, {}, ["v:0"], [])[0][0]) == 5.0
    assert float(master.run_step(b, {}, ["v:0"], [])[0][0]) == 7.0
    assert net.workers["localhost:5001"].resources.containers() == []  # none shared

    shared = config_pb2.ConfigProto()
    shared.CopyFrom(_cluster_config(TWO))
    shared.experimental.share_session_state_in_clusterspec_propagation = True
    c = _create(master, g, shared, target)
    master.run_step(c, {}, [], [v.initializer.name])
    master.run_step(c, {"value:0": np.float32(9.0)}, [], ["set"])
    d = _create(master, g, shared, target)
    assert float(master.run_step(d, {}, ["v:0"], [])[0][0]) == 9.0
    master.close_session(a)
    with pytest.raises(errors.AbortedError):
        master.run_step(a, {}, ["v:0"], [])
    assert float(master.run_step(b, {}, ["v:0"], [])[0][0]) == 7.0


def test_a_renamed_task_runs_under_the_sessions_name():
    # The server at localhost:5001 booted as /job:other/task:0.
    net = Network()
    net.start("localhost:5000", "worker", 0)
    net.start("localhost:5001", "other", 0)
    master = Master(("worker", 0), net.cache({"worker": ["localhost:5000"]}),
                    connect=net.connect)
    with tf.Graph().as_default() as g:
        with tf.device("/job:worker/task:1"):
            tf.constant(1.0, name="c")
    handle = _create(master, g, _cluster_config(TWO), "grpc://localhost:5000")
    names = sorted(d.name for d in master.list_devices(handle))
    assert names[1] == "/job:worker/replica:0/task:1/device:CPU:0"  # renamed, as TF shows
    values, metadata = master.run_step(handle, {}, ["c:0"], [], FULL_TRACE)
    assert float(values[0]) == 1.0
    assert _devices_of(metadata)["c"] == "/job:worker/replica:0/task:1/device:CPU:0"


# -- 2. device filters ---------------------------------------------------------------

THREE = {"ps": ["localhost:6000"], "worker": ["localhost:6001", "localhost:6002"]}


def _three(cpus: int = 1) -> tuple:
    net = _net(THREE, cpus)
    return Master(("worker", 0), net.cache(THREE), connect=net.connect), net


@pytest.mark.parametrize("filters, tasks", [
    (["/job:ps"], {"ps:0", "worker:0"}),
    (["/job:worker/task:1"], {"worker:0", "worker:1"}),
    (["/job:ps/device:CPU:0", "/job:worker/replica:0/task:1"], {"ps:0", "worker:0", "worker:1"}),
    (["/device:CPU:*"], {"ps:0", "worker:0", "worker:1"}),
    (["/job:nope"], {"worker:0"}),
])
def test_device_filters_choose_tasks_as_tf_does(filters, tasks):
    master, net = _three()
    with tf.Graph().as_default() as g:
        tf.constant(1.0, name="c")
    handle = _create(master, g, config_pb2.ConfigProto(device_filters=filters))
    seen = {"%s:%d" % (DeviceSpec.from_string(d.name).job, DeviceSpec.from_string(d.name).task)
            for d in master.list_devices(handle)}
    assert seen == tasks
    asked = {"localhost:6000": "ps:0", "localhost:6001": "worker:0", "localhost:6002": "worker:1"}
    assert {asked[a] for a in net.status_calls} == tasks  # filtered-out tasks never asked


def test_device_filters_apply_to_devices_and_pinned_ops_outside_fail():
    master, _ = _three(cpus=2)
    config = config_pb2.ConfigProto(device_filters=["/job:ps/device:CPU:1"])
    with tf.Graph().as_default() as g:
        with tf.device("/job:ps/task:0"):
            tf.constant(1.0, name="on_ps")
        with tf.device("/job:ps/device:CPU:0"):
            tf.constant(2.0, name="on_ps_cpu0")
        with tf.device("/job:worker/task:1"):
            tf.constant(3.0, name="on_w1")
    handle = _create(master, g, config)
    names = sorted(d.name for d in master.list_devices(handle))
    assert names == ["/job:ps/replica:0/task:0/device:CPU:1",
                     "/job:worker/replica:0/task:0/device:CPU:0",     # the master's task:
                     "/job:worker/replica:0/task:0/device:CPU:1"]     # all of its devices
    values, metadata = master.run_step(handle, {}, ["on_ps:0"], [], FULL_TRACE)
    assert _devices_of(metadata)["on_ps"] == "/job:ps/replica:0/task:0/device:CPU:1"
    for name, device in (("on_ps_cpu0", "/job:ps/device:CPU:0"),
                         ("on_w1", "/job:worker/task:1")):
        with pytest.raises(errors.InvalidArgumentError) as info:
            master.run_step(handle, {}, [f"{name}:0"], [])
        assert name in str(info.value) and device in str(info.value)


def test_malformed_device_filter_is_invalid_argument():
    master, _ = _three()
    with tf.Graph().as_default() as g:
        tf.constant(1.0, name="c")
    with pytest.raises(errors.InvalidArgumentError, match="/jobb:ps"):
        _create(master, g, config_pb2.ConfigProto(device_filters=["/jobb:ps"]))


def test_intersects_is_tf_device_finder_intersects():
    spec = DeviceSpec.from_string
    assert intersects(spec("/job:ps/replica:0/task:1"), spec("/job:ps/device:CPU:0"))
    assert not intersects(spec("/job:ps/replica:0/task:1"), spec("/job:ps/task:0"))
    assert intersects(spec("/job:w/replica:0/task:0/device:CPU:1"), spec("/device:CPU:*"))
    assert not intersects(spec("/job:w/replica:0/task:0/device:CPU:1"), spec("/cpu:0"))


# -- 3. lazy discovery, timeouts, restarts -------------------------------------------

def test_devices_are_asked_for_only_when_needed_cached_per_session():
    master, net = _three()
    with tf.Graph().as_default() as g:
        tf.constant(1.0, name="here")
        with tf.device("/job:ps/task:0"):
            tf.constant(2.0, name="on_ps")
    handle = _create(master, g)
    assert not net.status_calls  # nothing asked at CreateSession
    master.run_step(handle, {}, ["here:0"], [])
    assert set(net.status_calls) == {"localhost:6001"}
    master.run_step(handle, {}, ["on_ps:0"], [])
    assert set(net.status_calls) == {"localhost:6001", "localhost:6000"}
    master.run_step(handle, {}, ["here:0", "on_ps:0"], [])
    assert max(net.status_calls.values()) == 1  # cached across the session's steps
    other = _create(master, g)  # a new session lists afresh (a task may have restarted)
    master.run_step(other, {}, ["here:0", "on_ps:0"], [])
    assert net.status_calls == {"localhost:6001": 2, "localhost:6000": 2}


def test_a_dead_task_the_session_does_not_need_is_harmless():
    master, net = _three()
    with tf.Graph().as_default() as g:
        with tf.device("/job:ps/task:0"):
            a = tf.constant(2.0, name="a")
        tf.multiply(a, 3.0, name="b")
        with tf.device("/job:worker/task:1"):
            tf.identity(a, name="on_dead")
    # The master reached worker 1 before it died: no wait for it to come up.
    master.run_step(_create(master, g), {}, ["on_dead:0"], [])
    net.stop("localhost:6002")
    handle = _create(master, g)
    assert float(master.run_step(handle, {}, ["b:0"], [])[0][0]) == 6.0
    start = time.monotonic()
    with pytest.raises(errors.UnavailableError) as info:
        master.run_step(handle, {}, ["on_dead:0"], [])
    assert time.monotonic() - start < 5
    assert "/job:worker/replica:0/task:1" in str(info.value)


def test_unplaceable_unpinned_node_falls_back_to_every_task():
    # A node asking only for a device type the master's task lacks is placed
    # as with a full device list: the other tasks are asked too.
    net = Network()
    net.start("localhost:6001", "worker", 0, cpus=1)
    net.start("localhost:6002", "worker", 1, cpus=3)
    master = Master(("worker", 0), net.cache({"worker": ["localhost:6001", "localhost:6002"]}))
    with tf.Graph().as_default() as g:
        with tf.device("/device:CPU:2"):
            tf.constant(1.0, name="c2")
    handle = _create(master, g)
    values, metadata = master.run_step(handle, {}, ["c2:0"], [], FULL_TRACE)
    assert _devices_of(metadata)["c2"] == "/job:worker/replica:0/task:1/device:CPU:2"


def test_a_restarted_task_aborts_one_step_then_works():
    master, net = _three()
    g, v = _variable_graph()
    handle = _create(master, g)
    master.run_step(handle, {}, [], [v.initializer.name])
    master.run_step(handle, {"value:0": np.float32(4.0)}, [], ["set"])
    assert float(master.run_step(handle, {}, ["v:0"], [])[0][0]) == 4.0
    old = net.workers["localhost:6002"].incarnation
    net.start("localhost:6002", "worker", 1)  # restart: new incarnation, no graphs
    with pytest.raises(errors.AbortedError):
        master.run_step(handle, {}, ["v:0"], [])
    master.run_step(handle, {}, [], [v.initializer.name])  # state is gone, as in TF
    assert float(master.run_step(handle, {}, ["v:0"], [])[0][0]) == 0.0
    assert net.status_calls["localhost:6002"] == 2  # asked again after the restart
    incarnations = {d.incarnation for d in master.list_devices(handle) if "/task:1/" in d.name}
    assert incarnations == {net.workers["localhost:6002"].incarnation} != {old}


def test_restart_of_a_producer_aborts_a_cross_task_step():
    master, net = _three()
    with tf.Graph().as_default() as g:
        with tf.device("/job:ps/task:0"):
            a = tf.constant(2.0, name="a")
        tf.multiply(a, 3.0, name="b")
    handle = _create(master, g)
    assert float(master.run_step(handle, {}, ["b:0"], [])[0][0]) == 6.0
    net.start("localhost:6000", "ps", 0)
    with pytest.raises(errors.AbortedError):
        master.run_step(handle, {}, ["b:0"], [])
    assert float(master.run_step(handle, {}, ["b:0"], [])[0][0]) == 6.0


# -- 4. device names -----------------------------------------------------------------

@pytest.mark.parametrize("device, expected", [
    ("/cpu:0", "/job:w/replica:0/task:0/device:CPU:0"),
    ("/device:CPU:1", "/job:w/replica:0/task:0/device:CPU:1"),
    ("/job:w/replica:0/task:1/device:CPU:0", "/job:w/replica:0/task:1/device:CPU:0"),
    ("/job:w/task:1", "/job:w/replica:0/task:1/device:CPU:0"),
    ("/job:w/replica:0/task:1/cpu:1", "/job:w/replica:0/task:1/device:CPU:1"),
    ("/job:w/task:1/CPU:1", "/job:w/replica:0/task:1/device:CPU:1"),
    ("", "/job:w/replica:0/task:0/device:CPU:0"),
])
def test_canonical_and_legacy_device_names(device, expected):
    spec = {"w": ["localhost:7000", "localhost:7001"]}
    net = _net(spec, cpus=2)
    master = Master(("w", 0), net.cache(spec))
    with tf.Graph().as_default() as g:
        with tf.device(device):
            a = tf.constant(2.0, name="a")
        tf.multiply(a, 2.0, name="b")
    handle = _create(master, g)
    values, metadata = master.run_step(handle, {}, ["b:0"], [], FULL_TRACE)
    assert float(values[0]) == 4.0
    assert _devices_of(metadata)["a"] == expected
    canonical = {f"/job:w/replica:0/task:{t}/device:CPU:{i}" for t in (0, 1) for i in (0, 1)}
    assert {d.device for d in metadata.step_stats.dev_stats} <= canonical
    assert {n.device for pg in metadata.partition_graphs for n in pg.node} <= canonical


def test_place_reads_legacy_names_in_pure_placement():
    devices = [f"/job:w/replica:0/task:{t}/device:CPU:{i}" for t in (0, 1) for i in (0, 1)]
    with tf.Graph().as_default() as g:
        for i, device in enumerate(["/job:w/replica:0/task:1/cpu:1", "/job:w/task:1",
                                    "/CPU:1", "cpu:1"]):
            with tf.device(device):
                tf.constant(1.0, name=f"n{i}")
    nodes = {op.name: op.to_node() for op in g.get_operations()}
    placement = place(nodes, devices, ("w", 0), False, has_kernel)
    assert placement == {"n0": devices[3], "n1": devices[2], "n2": devices[1],
                         "n3": devices[1]}


# -- 5. Reset across tasks -----------------------------------------------------------

def _variables_everywhere():
    g = tf.Graph()
    with g.as_default():
        for job, task in (("ps", 0), ("worker", 0), ("worker", 1)):
            with tf.device(f"/job:{job}/task:{task}"):
                tf.Variable(1.0, name=f"v_{job}{task}")
        init = tf.global_variables_initializer()
    return g, init


def test_reset_clears_containers_on_every_task():
    master, net = _three()
    g, init = _variables_everywhere()
    handle = _create(master, g)
    master.run_step(handle, {}, [], [init.name])
    assert all(w.resources.containers() for w in net.workers.values())
    master.reset()
    assert not any(w.resources.containers() for w in net.workers.values())
    with pytest.raises(errors.AbortedError):
        master.run_step(handle, {}, [], [init.name])


def test_reset_with_a_task_down_clears_the_others_and_names_it():
    master, net = _three()
    g, init = _variables_everywhere()
    handle = _create(master, g)
    master.run_step(handle, {}, [], [init.name])
    net.stop("localhost:6002")
    with pytest.raises(errors.UnavailableError) as info:
        master.reset()
    assert "/job:worker/replica:0/task:1" in str(info.value)
    assert not any(w.resources.containers() for w in net.workers.values())


# -- real servers in this process, crossing gRPC ---------------------------------------

@pytest.fixture
def two_servers():
    """Two servers of one cluster {"worker": [localhost:p0, localhost:p1]}."""
    ports = free_ports(2)
    spec = {"worker": [f"localhost:{p}" for p in ports]}
    servers = [tf.distribute.Server(spec, job_name="worker", task_index=i) for i in range(2)]
    yield servers, spec
    for server in servers:
        server.stop()


def test_propagated_cluster_over_grpc_with_isolated_state(two_servers):
    (s0, s1), spec = two_servers
    master = s0._master
    g, v = _variable_graph()
    handle = _create(master, g, _cluster_config(spec), s0.target)
    master.run_step(handle, {}, [], [v.initializer.name])
    master.run_step(handle, {"value:0": np.float32(3.0)}, [], ["set"])
    values, metadata = master.run_step(handle, {}, ["v:0"], [], FULL_TRACE)
    assert float(values[0]) == 3.0
    assert _devices_of(metadata)["v"] == "/job:worker/replica:0/task:1/device:CPU:0"
    assert s1._worker.resources.containers() == []  # isolated: not in shared state
    plain = _create(master, g)  # the server's own cluster: shared state, no v yet
    with pytest.raises(errors.FailedPreconditionError):
        master.run_step(plain, {}, ["v:0"], [])


def test_session_reset_clears_every_task_and_names_a_dead_one(two_servers):
    (s0, s1), spec = two_servers
    g, v = _variable_graph()
    with g.as_default():
        with tf.Session(s0.target) as sess:
            sess.run(v.initializer)
            sess.run("set", {"value:0": 2.0})
    assert s1._worker.resources.containers()
    tf.Session.reset(s0.target)
    assert not s1._worker.resources.containers()
    with g.as_default():
        with tf.Session(s0.target) as sess:
            sess.run(v.initializer)
    s1.stop()
    start = time.monotonic()
    with pytest.raises(errors.UnavailableError) as info:
        tf.Session.reset(s0.target)
    assert time.monotonic() - start < 10
    assert "/job:worker/replica:0/task:1" in str(info.value)


def test_get_status_of_a_down_or_hung_task_is_bounded(refused_port):
    from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient
    hung = socket.socket()  # accepts connections, never speaks HTTP/2
    hung.bind(("localhost", 0))
    hung.listen(8)
    dead_port = refused_port
    local_net = _net({"worker": ["localhost:1"]})
    try:
        master = Master(("worker", 0), local_net.cache({"worker": ["localhost:1"]}),
                        connect=GrpcWorkerClient)
        with tf.Graph().as_default() as g:
            with tf.device("/job:worker/task:1"):
                tf.constant(1.0, name="c")
        for address, error, limit in (
                (f"localhost:{dead_port}", errors.UnavailableError, 5.0),
                (f"localhost:{hung.getsockname()[1]}", errors.DeadlineExceededError, 3.0)):
            config = _cluster_config({"worker": ["localhost:1", address]},
                                     operation_timeout_in_ms=500)
            handle = _create(master, g, config, "grpc://localhost:1")
            start = time.monotonic()
            with pytest.raises(error) as info:
                master.run_step(handle, {}, ["c:0"], [])
            assert time.monotonic() - start < limit
            assert address in str(info.value) and "/job:worker/replica:0/task:1" \
                in str(info.value)
    finally:
        hung.close()


# -- task processes (`python -m nbcluster.server`), master reached over gRPC ------------

def _ps_graph():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.float32(2.0), name="v")
        tf.multiply(v, 3.0, name="y")
    return g, v


@contextlib.contextmanager
def _ps_session(cluster_factory):
    """A 1 ps + 1 worker cluster and a session on the worker, its ps variable set."""
    cluster = cluster_factory({"ps": 1, "worker": 1})
    g, v = _ps_graph()
    with g.as_default(), tf.Session(cluster.target("worker", 0)) as sess:
        sess.run(v.initializer)
        assert float(sess.run("y:0")) == 6.0
        yield cluster, sess, v


@pytest.mark.timeout(120)
def test_processes_filters_skip_a_dead_task_and_a_needed_one_fails_fast(cluster_factory):
    cluster = cluster_factory({"ps": 1, "worker": 2})
    cluster.kill("worker", 1)
    g, v = _ps_graph()
    with g.as_default():
        with tf.device("/job:worker/task:1"):
            tf.identity(v, name="on_dead")
        config = tf.ConfigProto(device_filters=["/job:ps"])
        with tf.Session(cluster.target("worker", 0), config=config) as sess:
            sess.run(v.initializer)
            assert float(sess.run("y:0")) == 6.0
            names = sorted(d.name for d in sess.list_devices())
            assert names == ["/job:ps/replica:0/task:0/device:CPU:0",
                             "/job:worker/replica:0/task:0/device:CPU:0"]
        # Never reached, worker 1 might be still starting: the session waits
        # for it as long as its operation timeout.
        short_wait = tf.ConfigProto(operation_timeout_in_ms=2000)
        with tf.Session(cluster.target("worker", 0), config=short_wait) as sess:
            start = time.monotonic()
            with pytest.raises(errors.UnavailableError) as info:
                sess.run("on_dead:0")
            assert time.monotonic() - start < 10
            assert "/job:worker/replica:0/task:1" in str(info.value)


@pytest.mark.timeout(120)
def test_processes_hung_task_gives_deadline_exceeded(cluster_factory):
    import os
    import signal

    from process_checks import stop_process
    cluster = cluster_factory({"ps": 1, "worker": 1})
    g, v = _ps_graph()
    try:
        stop_process(cluster.pid("ps", 0))  # stopped before the step: it must not answer
        with g.as_default():
            config = tf.ConfigProto(operation_timeout_in_ms=1000)
            with tf.Session(cluster.target("worker", 0), config=config) as sess:
                start = time.monotonic()
                with pytest.raises(errors.DeadlineExceededError) as info:
                    sess.run(v.initializer)
                assert time.monotonic() - start < 8
                assert "/job:ps/replica:0/task:0" in str(info.value)
    finally:
        os.kill(cluster.pid("ps", 0), signal.SIGCONT)


@pytest.mark.timeout(120)
def test_processes_a_task_stopped_mid_session_fails_the_step_without_its_cleanup_s_wait(
        cluster_factory):
    """Regression: found hung by its RunGraph's probe, a SIGSTOPped ps still
    held the step's UnavailableError back for its CleanupGraph's 30 s deadline.
    Once it runs again, the session goes on."""
    import os
    import signal

    from nbcluster.rpc.grpc_transport.worker_control import CONTROL_TIMEOUT
    from nbcluster.rpc.socket_transport.connections import PROBE_S

    from process_checks import stop_process
    with _ps_session(cluster_factory) as (cluster, sess, _):
        stop_process(cluster.pid("ps", 0))
        try:
            start = time.monotonic()
            with pytest.raises(errors.UnavailableError) as info:
                sess.run("y:0")
            took = time.monotonic() - start
        finally:
            os.kill(cluster.pid("ps", 0), signal.SIGCONT)
        assert "stopped answering" in str(info.value)
        # found by the probe after PROBE_S of silence, not after the cleanup's deadline
        assert took < PROBE_S + CONTROL_TIMEOUT / 2, took
        assert float(sess.run("y:0")) == 6.0


@pytest.mark.timeout(120)
def test_processes_restarted_task_aborts_then_the_next_run_replans(cluster_factory):
    with _ps_session(cluster_factory) as (cluster, sess, v):
        cluster.restart("ps", 0)
        with pytest.raises(errors.AbortedError):
            sess.run("y:0")
        sess.run(v.initializer)  # the restarted task lost its variables, as in TF
        assert float(sess.run("y:0")) == 6.0


@pytest.mark.timeout(120)
def test_processes_reset_clears_every_task_and_names_a_dead_one(cluster_factory):
    cluster = cluster_factory({"ps": 1, "worker": 2})
    target = cluster.target("worker", 0)
    g, v = _ps_graph()
    with g.as_default():
        with tf.device("/job:worker/task:1"):
            w = tf.Variable(np.float32(1.0), name="w")
        with tf.Session(target) as sess:
            sess.run([v.initializer, w.initializer])
        tf.Session.reset(target)
        with tf.Session(target) as sess:
            for var in (v, w):
                with pytest.raises(errors.FailedPreconditionError):
                    sess.run(var)
            sess.run(v.initializer)
        cluster.kill("worker", 1)
        with pytest.raises(errors.UnavailableError) as info:
            tf.Session.reset(target)
        assert "/job:worker/replica:0/task:1" in str(info.value)
        with tf.Session(target) as sess:
            with pytest.raises(errors.FailedPreconditionError):
                sess.run(v)  # the live ps task was cleared all the same


def test_an_unplaceable_legacy_name_is_quoted_as_written():
    master, _ = _three()
    with tf.Graph().as_default() as g:
        with tf.device("/job:ps/task:0/cpu:3"):
            tf.constant(1.0, name="c")
    handle = _create(master, g)
    with pytest.raises(errors.InvalidArgumentError) as info:
        master.run_step(handle, {}, ["c:0"], [])
    assert "/job:ps/task:0/device:CPU:3" in str(info.value)


def test_session_with_its_own_cluster_def_through_the_public_api(two_servers):
    (s0, s1), spec = two_servers
    with tf.Graph().as_default() as g:
        with tf.device("/job:worker/task:1"):
            y = tf.constant([1.0, 2.0]) * 3.0
        config = tf.ConfigProto(cluster_def=tf.train.ClusterSpec(spec).as_cluster_def())
        meta = tf.RunMetadata()
        with tf.Session(s0.target, graph=g,
                        config=config) as sess:
            out = sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                           run_metadata=meta)
    np.testing.assert_array_equal(out, [3.0, 6.0])
    assert _devices_of(meta)[y.op.name] == "/job:worker/replica:0/task:1/device:CPU:0"
