"""Master + workers over the in-process transport: placement, pruning,
partitioning with Send/Recv, errors. No sockets."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.framework.node import Node
from nbcluster.master_worker.master import Master
from nbcluster.master_worker.partition import partition
from nbcluster.master_worker.placement import place
from nbcluster.master_worker.rendezvous import StepRendezvous, make_key, parse_key
from nbcluster.master_worker.transport import InProcessWorkerClient
from nbcluster.master_worker.worker import Worker
from nbcluster.proto import config_pb2
from nbcluster.runtime.devices import local_devices
from nbcluster.runtime.kernel_table import has_kernel

pytestmark = pytest.mark.timeout(60)

FULL_TRACE = config_pb2.RunOptions(trace_level=config_pb2.RunOptions.FULL_TRACE)


class InProcessCluster:
    """A WorkerCache of in-process workers that reach each other directly."""

    def __init__(self, tasks: dict) -> None:  # {(job, task): cpu count}
        self.workers = {}
        for (job, task), cpus in tasks.items():
            devices = local_devices(job, task, {"CPU": cpus})
            self.workers[(job, task)] = Worker(job, task, devices, peers=self.get)

    def tasks(self) -> list:
        return sorted(self.workers)

    def get(self, job: str, task: int):
        try:
            return InProcessWorkerClient(self.workers[(job, task)])
        except KeyError:
            raise errors.InvalidArgumentError(None, None,
                                              f"Unknown task /job:{job}/task:{task}") from None


def _master(tasks: dict, local=None, **config) -> tuple:
    cluster = InProcessCluster(tasks)
    master = Master(local or cluster.tasks()[0], cluster, config_pb2.ConfigProto(**config))
    return master, cluster


def _session(master: Master, graph, config=None) -> str:
    handle, _ = master.create_session([op.to_node() for op in graph.get_operations()], config)
    return handle


def _devices_of(metadata) -> dict:
    return {n.node_name: d.device for d in metadata.step_stats.dev_stats for n in d.node_stats}


# -- one task, several CPUs ------------------------------------------------------

def test_placement_across_device_count_cpus():
    master, _ = _master({("localhost", 0): 3})
    with tf.Graph().as_default() as g:
        with tf.device("/cpu:2"):
            a = tf.constant([1.0, 2.0], name="a2")
            b = tf.multiply(a, 3.0, name="b2")
        with tf.device("/device:CPU:1"):
            c = tf.add(b, 1.0, name="c1")
        tf.identity(c, name="d_default")
    handle = _session(master, g)
    values, metadata = master.run_step(handle, {}, ["d_default:0"], [], FULL_TRACE)
    np.testing.assert_allclose(values[0], [4.0, 7.0])
    where = _devices_of(metadata)
    prefix = "/job:localhost/replica:0/task:0/device:CPU:"
    assert where["b2"] == prefix + "2"
    assert where["c1"] == prefix + "1"
    assert where["d_default"] == prefix + "0"
    # One partition graph per device, joined by _Send/_Recv pairs.
    assert len(metadata.partition_graphs) == 3
    ops = [n.op for pg in metadata.partition_graphs for n in pg.node]
    assert ops.count("_Send") >= 2 and ops.count("_Recv") >= 2


def test_pruning_runs_only_what_is_needed():
    master, _ = _master({("localhost", 0): 1})
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [], name="unfed")
        tf.identity(x, name="needs_unfed")
        a = tf.constant(2.0, name="a")
        tf.multiply(a, a, name="sq")
        tf.add(a, 1.0, name="other")
    handle = _session(master, g)
    values, metadata = master.run_step(handle, {}, ["sq:0"], [], FULL_TRACE)
    assert float(values[0]) == 4.0
    registered = {n.name for pg in metadata.partition_graphs for n in pg.node}
    assert {"a", "sq"} <= registered
    assert not registered & {"unfed", "needs_unfed", "other"}


def test_targets_run_without_fetches():
    master, cluster = _master({("localhost", 0): 1})
    with tf.Graph().as_default() as g:
        v = tf.Variable(1.0, name="v")
        tf.assign_add(v, 2.0, name="bump")
    handle = _session(master, g)
    master.run_step(handle, {}, [], [v.initializer.name])
    values, _ = master.run_step(handle, {}, [], ["bump"])
    assert values == []
    values, _ = master.run_step(handle, {}, ["v:0"], [])
    assert float(values[0]) == 3.0


def test_feeds_reach_the_consuming_device():
    master, _ = _master({("localhost", 0): 2})
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None], name="x")
        with tf.device("/cpu:1"):
            y = tf.multiply(x, 2.0, name="y")
        tf.add(y, x, name="z")
    handle = _session(master, g)
    values, _ = master.run_step(handle, {"x:0": np.array([1.0, 2.0], np.float32)},
                                ["z:0", "x:0"], [])
    np.testing.assert_allclose(values[0], [3.0, 6.0])
    np.testing.assert_allclose(values[1], [1.0, 2.0])


# -- several tasks -------------------------------------------------------------------

def test_variable_on_ps_compute_on_worker():
    tasks = {("ps", 0): 1, ("worker", 0): 1, ("worker", 1): 1}
    master, cluster = _master(tasks, local=("worker", 0))
    with tf.Graph().as_default() as g:
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.full((2, 2), 2.0, np.float32), name="w")
        with tf.device("/job:worker/task:1"):
            x = tf.placeholder(tf.float32, [None, 2], name="x")
            y = tf.matmul(x, w, name="y")
        tf.assign_add(w, tf.ones([2, 2]), name="update")
        tf.reduce_sum(y, name="z")
    handle = _session(master, g)
    master.run_step(handle, {}, [], [w.initializer.name])
    feed = {"x:0": np.ones((1, 2), np.float32)}
    values, metadata = master.run_step(handle, feed, ["y:0", "z:0"], [], FULL_TRACE)
    np.testing.assert_allclose(values[0], [[4.0, 4.0]])
    assert float(values[1]) == 8.0
    where = _devices_of(metadata)
    assert where["y"] == "/job:worker/replica:0/task:1/device:CPU:0"
    assert where["z"] == "/job:worker/replica:0/task:0/device:CPU:0"  # the master's task
    assert where["w"] == "/job:ps/replica:0/task:0/device:CPU:0"
    master.run_step(handle, {}, [], ["update"])  # colocated with w, on ps
    values, _ = master.run_step(handle, feed, ["z:0"], [])
    assert float(values[0]) == 12.0
    # The variable lives on the ps task's worker only.
    ps = cluster.workers[("ps", 0)]
    assert "w" in ps.resources.names("ps")
    assert cluster.workers[("worker", 1)].resources.containers() == []


def test_error_on_one_task_cancels_a_recv_blocked_on_another():
    tasks = {("worker", 0): 1, ("worker", 1): 1}
    master, _ = _master(tasks)
    with tf.Graph().as_default() as g:
        with tf.device("/job:worker/task:1"):
            q = tf.FIFOQueue(2, [tf.float32], shapes=[[]], name="q")
            blocked = q.dequeue()
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [None], name="x")
            tf.reshape(x, [3], name="bad_reshape")
            tf.add(blocked, 1.0, name="needs_remote")
    handle = _session(master, g)
    start = time.monotonic()
    with pytest.raises(errors.InvalidArgumentError, match="bad_reshape"):
        master.run_step(handle, {"x:0": np.ones(4, np.float32)},
                        ["needs_remote:0", "bad_reshape:0"], [])
    assert time.monotonic() - start < 15


def test_closing_a_session_cancels_its_blocked_step():
    master, _ = _master({("localhost", 0): 1})
    with tf.Graph().as_default() as g:
        q = tf.FIFOQueue(2, [tf.float32], shapes=[[]], name="q")
        q.dequeue(name="deq")
    handle = _session(master, g)
    timer = threading.Timer(0.3, master.close_session, [handle])
    timer.start()
    try:
        with pytest.raises(errors.CancelledError):
            master.run_step(handle, {}, ["deq:0"], [])
    finally:
        timer.join()
    with pytest.raises(errors.AbortedError):
        master.run_step(handle, {}, ["deq:0"], [])


def test_list_devices_covers_every_task():
    tasks = {("ps", 0): 1, ("worker", 0): 2}
    master, _ = _master(tasks, local=("worker", 0))
    names = sorted(d.name for d in master.list_devices())
    assert names == ["/job:ps/replica:0/task:0/device:CPU:0",
                     "/job:worker/replica:0/task:0/device:CPU:0",
                     "/job:worker/replica:0/task:0/device:CPU:1"]


def test_device_filters_hide_other_tasks():
    tasks = {("ps", 0): 1, ("worker", 0): 1}
    master, _ = _master(tasks, local=("worker", 0))
    with tf.Graph().as_default() as g:
        with tf.device("/job:ps/task:0"):
            tf.constant(1.0, name="on_ps")
    config = config_pb2.ConfigProto(device_filters=["/job:worker"])
    handle = _session(master, g, config)
    with pytest.raises(errors.InvalidArgumentError, match="on_ps"):
        master.run_step(handle, {}, ["on_ps:0"], [])


# -- bad input ---------------------------------------------------------------------------

@pytest.mark.parametrize("device", ["/job:ps/task:0", "/job:localhost/task:3",
                                    "/device:CPU:7", "/device:TPU:0"])
def test_unknown_device_is_invalid_argument_naming_it(device):
    master, _ = _master({("localhost", 0): 1})
    with tf.Graph().as_default() as g:
        with tf.device(device):
            tf.constant(1.0, name="pinned")
    handle = _session(master, g)
    with pytest.raises(errors.InvalidArgumentError) as info:
        master.run_step(handle, {}, ["pinned:0"], [])
    message = str(info.value)
    assert "pinned" in message
    spec = device.split("/")[-1].split(":")
    assert spec[-1] in message and spec[0].lower() in message.lower()


@pytest.mark.parametrize("device", ["/jobb:ps", "not a device", "/device:CPU:x"])
def test_malformed_device_string_is_invalid_argument_naming_it(device):
    master, _ = _master({("localhost", 0): 1})
    node = Node("pinned", "Const", (), device,
                {"value": np.zeros((), np.float32), "dtype": tf.float32,
                 "_output_types": [tf.float32]})
    handle, _ = master.create_session([node])
    with pytest.raises(errors.InvalidArgumentError) as info:
        master.run_step(handle, {}, ["pinned:0"], [])
    assert device in str(info.value)


def test_soft_placement_allows_a_missing_device():
    master, _ = _master({("localhost", 0): 1})
    with tf.Graph().as_default() as g:
        with tf.device("/device:CPU:7"):
            tf.add(tf.constant(1.0), 1.0, name="soft")
    handle = _session(master, g, config_pb2.ConfigProto(allow_soft_placement=True))
    values, _ = master.run_step(handle, {}, ["soft:0"], [])
    assert float(values[0]) == 2.0


def test_unknown_fetch_and_target_are_errors():
    master, _ = _master({("localhost", 0): 1})
    with tf.Graph().as_default() as g:
        tf.constant(1.0, name="c")
    handle = _session(master, g)
    with pytest.raises(errors.InvalidArgumentError, match="nope"):
        master.run_step(handle, {}, ["nope:0"], [])
    with pytest.raises(errors.InvalidArgumentError, match="c:3"):
        master.run_step(handle, {}, ["c:3"], [])
    with pytest.raises(errors.NotFoundError, match="ghost"):
        master.run_step(handle, {}, [], ["ghost"])


def test_extend_with_a_duplicate_or_stale_version_is_rejected():
    master, _ = _master({("localhost", 0): 1})
    with tf.Graph().as_default() as g:
        tf.constant(1.0, name="c")
    handle, version = master.create_session([op.to_node() for op in g.get_operations()])
    assert version == 0  # TF's graph versions: 0 at creation, one more per extend
    dup = Node("c", "NoOp")
    with pytest.raises(errors.InvalidArgumentError, match="'c'"):
        master.extend_session(handle, [dup], version)
    with pytest.raises(errors.FailedPreconditionError, match="version is 0 but the client "
                                                             "expected 5"):
        master.extend_session(handle, [Node("d", "NoOp")], version + 5)
    assert master.extend_session(handle, [Node("d", "NoOp")], version) == 1
    assert master.extend_session(handle, [Node("e", "NoOp")], 1) == 2


def test_unknown_session_handle_is_aborted():
    master, _ = _master({("localhost", 0): 1})
    with pytest.raises(errors.AbortedError):
        master.run_step("missing", {}, [], [])


def test_worker_refuses_a_node_on_a_foreign_device():
    worker = Worker("w", 0, local_devices("w", 0))
    node = Node("n", "NoOp", (), "/job:other/replica:0/task:0/device:CPU:0")
    with pytest.raises(errors.InvalidArgumentError, match="/job:other"):
        worker.register_graph("s", [node])


def test_worker_unknown_graph_handle_is_aborted():
    worker = Worker("w", 0, local_devices("w", 0))
    with pytest.raises(errors.AbortedError):
        worker.run_graph("s", "w:0:g99", 1, {}, [])


# -- the pure pieces -----------------------------------------------------------------------

def test_partition_adds_matching_send_recv_pairs():
    d0 = "/job:a/replica:0/task:0/device:CPU:0"
    d1 = "/job:b/replica:0/task:0/device:CPU:0"
    nodes = [Node("x", "Const", (), d0, {"_output_types": [tf.float32]}),
             Node("gate", "NoOp", (), d0),
             Node("y", "Identity", ("x", "^gate"), d1, {"_output_types": [tf.float32]}),
             Node("z", "Identity", ("x",), d1)]
    parts = partition(nodes, key=lambda d: d, incarnation=lambda d: 7)
    assert set(parts) == {d0, d1}
    sends = [n for n in parts[d0] if n.op == "_Send"]
    recvs = [n for n in parts[d1] if n.op == "_Recv"]
    assert len(sends) == 2 and len(recvs) == 2  # x once (shared by y, z), ^gate once
    assert {s.attrs["tensor_name"] for s in sends} == {r.attrs["tensor_name"] for r in recvs}
    for s in sends:
        assert s.attrs["send_device"] == d0 and s.attrs["recv_device"] == d1
        assert s.attrs["send_device_incarnation"] == 7
    y = next(n for n in parts[d1] if n.name == "y")
    z = next(n for n in parts[d1] if n.name == "z")
    assert y.inputs[0] == z.inputs[0]  # one Recv feeds both consumers
    assert y.control_inputs() and y.control_inputs()[0].startswith("_recv_")


def test_partition_of_one_device_is_unchanged():
    d0 = "/job:a/replica:0/task:0/device:CPU:0"
    nodes = [Node("x", "Const", (), d0), Node("y", "Identity", ("x",), d0)]
    parts = partition(nodes, key=lambda d: d, incarnation=lambda d: 1)
    assert parts == {d0: nodes}


def test_place_colocates_variable_users():
    devices = [f"/job:w/replica:0/task:0/device:CPU:{i}" for i in range(2)]
    with tf.Graph().as_default() as g:
        with tf.device("/cpu:1"):
            v = tf.Variable(1.0, name="v")
        tf.assign_add(v, 1.0, name="bump")
    nodes = {op.name: op.to_node() for op in g.get_operations()}
    placement = place(nodes, devices, ("w", 0), False, has_kernel)
    assert placement["v"] == devices[1]
    assert placement["bump"] == devices[1]


def test_a_variable_user_asking_for_another_job_runs_with_the_variable_as_in_tf():
    # TF's placer ignores such a device ("the input edge ... is a reference
    # connection and already has a device field set"); two variables of one
    # group on different jobs still cannot be colocated
    devices = ["/job:w/replica:0/task:0/device:CPU:0", "/job:ps/replica:0/task:0/device:CPU:0"]
    with tf.Graph().as_default() as g:
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(1.0, name="v")
        with tf.device("/job:w/task:0"):
            tf.assign_add(v, 1.0, name="bump")
            tf.multiply(v, 2.0, name="twice")
    nodes = {op.name: op.to_node() for op in g.get_operations()}
    placement = place(nodes, devices, ("w", 0), False, has_kernel)
    assert placement["bump"] == devices[1]
    assert placement["twice"] == devices[0]  # its value, not the variable, travels
    with tf.Graph().as_default() as g:
        with tf.device("/job:ps/task:0"):
            a = tf.Variable(1.0, name="a")
        with tf.device("/job:w/task:0"):
            b = tf.Variable(1.0, name="b")
            with tf.colocate_with(a):
                tf.assign(b, 2.0, name="tie")
    nodes = {op.name: op.to_node() for op in g.get_operations()}
    with pytest.raises(errors.InvalidArgumentError, match="Cannot colocate nodes"):
        place(nodes, devices, ("w", 0), False, has_kernel)


def test_rendezvous_key_round_trip_and_abort():
    key = make_key("/job:a/replica:0/task:0/device:CPU:0", 255,
                   "/job:b/replica:0/task:0/device:CPU:0", "x:0")
    assert parse_key(key) == ("/job:a/replica:0/task:0/device:CPU:0", 255,
                              "/job:b/replica:0/task:0/device:CPU:0", "x:0", "0:0")
    with pytest.raises(errors.InvalidArgumentError):
        parse_key("a;b")
    rendezvous = StepRendezvous(1)
    threading.Timer(0.1, rendezvous.send, [key, 42]).start()
    assert rendezvous.recv_local(key, deadline=time.monotonic() + 5) == 42
    other = key.replace("x:0", "y:0")
    threading.Timer(0.1, rendezvous.abort,
                    [errors.CancelledError(None, None, "gone")]).start()
    with pytest.raises(errors.CancelledError):
        rendezvous.recv_local(other, deadline=time.monotonic() + 5)
    with pytest.raises(errors.DeadlineExceededError):
        StepRendezvous(2).recv_local(other, deadline=time.monotonic() + 0.1)
