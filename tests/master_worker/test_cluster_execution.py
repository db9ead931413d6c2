"""Distributed execution across task processes: a ps and two workers, each
`python -m nbcluster.server` in its own process, talking real gRPC.

Each test is bounded (pytest-timeout); every task process is stopped by pid
at teardown (tests/conftest.py's `local_cluster` / `cluster_factory`).
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors

pytestmark = pytest.mark.timeout(60)

PS = "/job:ps/replica:0/task:0/device:CPU:0"
W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"
FULL_TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)


def _op_devices(metadata) -> dict:
    """{node name: device} from a RunMetadata's step stats."""
    return {n.node_name: d.device for d in metadata.step_stats.dev_stats for n in d.node_stats}


def _three_task_graph():
    rng = np.random.default_rng(0)
    w_val = rng.standard_normal((4, 3)).astype(np.float32)
    x_val = rng.standard_normal((5, 4)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(w_val, name="w")
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [None, 4], name="x")
            y0 = tf.matmul(x, w, name="y0")
        with tf.device("/job:worker/task:1"):
            y1 = tf.matmul(x * 2.0, w, name="y1")
            total = tf.add(tf.reduce_sum(y0), tf.reduce_sum(y1), name="total")
        init = tf.global_variables_initializer()
    return graph, init, x, (y0, y1, total), (w_val, x_val)


# -- one graph across three tasks ---------------------------------------------

def test_graph_pinned_to_ps_and_two_workers_matches_numpy(local_cluster):
    graph, init, x, (y0, y1, total), (w_val, x_val) = _three_task_graph()
    with tf.Session(local_cluster.target("worker", 0), graph=graph) as sess:
        sess.run(init)
        meta = tf.RunMetadata()
        got0, got1, got_total = sess.run([y0, y1, total], {x: x_val}, options=FULL_TRACE,
                                         run_metadata=meta)
    np.testing.assert_allclose(got0, x_val @ w_val, rtol=1e-5)
    np.testing.assert_allclose(got1, (2 * x_val) @ w_val, rtol=1e-5)
    np.testing.assert_allclose(got_total, (x_val @ w_val).sum() + (2 * x_val @ w_val).sum(),
                               rtol=1e-4)
    where = _op_devices(meta)
    assert where["w"] == PS and where["y0"] == W0 and where["y1"] == W1
    assert where["total"] == W1
    assert {d.device for d in meta.step_stats.dev_stats} == {PS, W0, W1}
    # One partition graph per task; each holds only its own task's devices,
    # and the cross-task edges became _Send/_Recv pairs.
    per_graph = [{n.device for n in g.node} for g in meta.partition_graphs]
    assert sorted(map(sorted, per_graph)) == [[PS], [W0], [W1]]
    ops = {n.op for g in meta.partition_graphs for n in g.node}
    assert {"_Send", "_Recv"} <= ops


def test_list_devices_shows_every_task(local_cluster):
    with tf.Graph().as_default():
        with tf.Session(local_cluster.target("worker", 1)) as sess:
            names = {d.name for d in sess.list_devices()}
    assert {PS, W0, W1} <= names


@pytest.mark.parametrize("device, expected", [
    ("/cpu:0", W0),                      # no task: the session's own task (worker 0)
    ("/device:CPU:0", W0),
    ("/job:worker/replica:0/task:1/device:CPU:0", W1),
    ("/job:worker/task:1/cpu:0", W1),
    ("/job:ps/device:CPU:0", PS),
    ("/job:ps", PS),
    ("/job:ps/task:0/cpu:0", PS),
])
def test_legacy_and_canonical_device_names_place_correctly(local_cluster, device, expected):
    with tf.Graph().as_default():
        with tf.device(device):
            c = tf.constant(np.arange(3, dtype=np.float32), name="c")
            y = tf.multiply(c, 2.0, name="y")
        with tf.Session(local_cluster.target("worker", 0)) as sess:
            meta = tf.RunMetadata()
            np.testing.assert_array_equal(sess.run(y, options=FULL_TRACE, run_metadata=meta),
                                          [0.0, 2.0, 4.0])
    assert _op_devices(meta)["y"] == expected


# -- state shared through the ps -------------------------------------------------

def test_two_clients_share_one_ps_variable(local_cluster):
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.zeros(3, np.float32), name="shared_v")
        with tf.device("/job:worker/task:0"):
            bump = tf.assign_add(v, np.ones(3, np.float32))
        with tf.device("/job:worker/task:1"):
            read = tf.identity(v, name="read")
        init = tf.global_variables_initializer()
    with tf.Session(local_cluster.target("worker", 0), graph=graph) as s0, \
            tf.Session(local_cluster.target("worker", 1), graph=graph) as s1:
        s0.run(init)
        for _ in range(3):
            s0.run(bump)
        np.testing.assert_array_equal(s1.run(read), [3.0, 3.0, 3.0])
        s1.run(bump)
        np.testing.assert_array_equal(s0.run(v), [4.0, 4.0, 4.0])


# -- failures ----------------------------------------------------------------------

@pytest.mark.timeout(90)
def test_killed_ps_mid_step_is_unavailable_quickly_and_others_keep_serving(local_cluster):
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            queue = tf.FIFOQueue(4, [tf.float32], shapes=[[]], name="q")
            item = queue.dequeue()
        with tf.device("/job:worker/task:0"):
            needs_ps = tf.multiply(item, 2.0, name="needs_ps")
            a = tf.constant(3.0, name="a")
        with tf.device("/job:worker/task:1"):
            no_ps = tf.add(a, 1.0, name="no_ps")
    with tf.Session(local_cluster.target("worker", 0), graph=graph) as sess:
        assert sess.run(no_ps) == 4.0
        outcome: dict = {}

        def step():
            try:
                outcome["value"] = sess.run(needs_ps)  # blocks: the queue is empty
            except errors.OpError as e:
                outcome["error"] = e
            outcome["at"] = time.monotonic()

        runner = threading.Thread(target=step, daemon=True)
        runner.start()
        time.sleep(1.0)
        assert runner.is_alive(), outcome
        killed_at = time.monotonic()
        local_cluster.kill("ps", 0)
        runner.join(15)
        assert not runner.is_alive(), "the step did not end after its ps was killed"
        assert isinstance(outcome.get("error"), errors.UnavailableError), outcome
        assert outcome["at"] - killed_at < 10
        # The workers are still up and a graph not touching the ps still runs.
        assert sess.run(no_ps) == 4.0
    # A new session elsewhere works when it leaves the dead task out (as in TF,
    # whose new sessions wait for every task unless device_filters say not to).
    workers_only = tf.ConfigProto(device_filters=["/job:worker"])
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:1"):
            z = tf.constant(5.0) * 2.0
        with tf.Session(local_cluster.target("worker", 1), config=workers_only) as other:
            assert other.run(z) == 10.0


def _restart_graph():
    """w on the ps -> y1 on worker 1 -> z on worker 0: worker 1 both receives
    and sends, so its incarnation is in the step's rendezvous keys."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.arange(3, dtype=np.float32), name="w")
        with tf.device("/job:worker/task:1"):
            y1 = tf.multiply(w, 2.0, name="y1")
        with tf.device("/job:worker/task:0"):
            z = tf.add(y1, 1.0, name="z")
        init = tf.global_variables_initializer()
    return graph, init, z, np.arange(3, dtype=np.float32) * 2 + 1


@pytest.mark.timeout(90)
def test_restarted_worker_gives_aborted_not_a_wrong_answer(local_cluster):
    graph, init, z, expected = _restart_graph()
    with tf.Session(local_cluster.target("worker", 0), graph=graph) as sess:
        sess.run(init)
        np.testing.assert_array_equal(sess.run(z), expected)
        local_cluster.restart("worker", 1)
        for _ in range(2):  # the graph handle is gone, then the incarnation is stale
            started = time.monotonic()
            try:
                got = sess.run(z)
            except errors.AbortedError:
                assert time.monotonic() - started < 10
            else:  # rerunning after re-registration is allowed, a wrong answer is not
                np.testing.assert_array_equal(got, expected)


@pytest.mark.timeout(90)
def test_new_session_after_worker_restart_runs(local_cluster):
    graph, init, z, expected = _restart_graph()
    with tf.Session(local_cluster.target("worker", 0), graph=graph) as sess:
        sess.run(init)
        np.testing.assert_array_equal(sess.run(z), expected)
    local_cluster.restart("worker", 1)
    with tf.Session(local_cluster.target("worker", 0), graph=graph) as sess:
        np.testing.assert_array_equal(sess.run(z), expected)


@pytest.mark.parametrize("device, named", [
    ("/job:ps/task:x", "'x'"),
    ("/gpu:zero", "'zero'"),
])
def test_malformed_device_string_is_refused_when_building(device, named):
    with tf.Graph().as_default():
        with pytest.raises(errors.InvalidArgumentError, match=named):
            with tf.device(device):
                tf.constant(1.0)


@pytest.mark.parametrize("device, named", [
    ("/job:ps/task:x", "/job:ps/task:x"),
    ("/gpu:zero", "/gpu:zero"),
    ("/job:nope", "/job:nope"),
    ("/job:worker/task:7", "/job:worker/task:7"),
    ("/job:ps/device:GPU:0", "/job:ps/device:GPU:0"),
])
def test_bad_or_unknown_devices_are_invalid_argument_and_servers_survive(local_cluster, device,
                                                                         named):
    target = local_cluster.target("worker", 0)
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            good = tf.constant(2.0, name="good") * 3.0
        bad = tf.constant(1.0, name="bad_node")
        bad.op._set_device(device)  # as a client that skips our checks would send it
        with tf.Session(target) as sess:
            with pytest.raises(errors.InvalidArgumentError) as info:
                sess.run(bad)
            assert named in str(info.value) and "bad_node" in str(info.value)
            assert sess.run(good) == 6.0  # same session, same servers: still fine
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:1"):
            after = tf.constant(1.0) + 1.0
        with tf.Session(target) as sess:
            assert sess.run(after) == 2.0


# -- big tensors ---------------------------------------------------------------------

def _peak_rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc status")


@pytest.mark.timeout(300)
def test_one_gib_tensor_from_ps_to_worker(local_cluster):
    n = 2 ** 28  # float32: 1 GiB
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            big = tf.ones([n], tf.float32, name="big")
        with tf.device("/job:worker/task:1"):
            total = tf.reduce_sum(big, name="total")
        with tf.Session(local_cluster.target("worker", 0)) as sess:
            meta = tf.RunMetadata()
            assert sess.run(total, options=FULL_TRACE, run_metadata=meta) == float(n)
    where = _op_devices(meta)
    assert where["big"] == PS and where["total"] == W1
    gib = 2 ** 30
    # Memory sanity: no task held more than a few copies of the tensor.
    assert _peak_rss_bytes(local_cluster.pid("ps", 0)) < 4 * gib
    assert _peak_rss_bytes(local_cluster.pid("worker", 1)) < 4 * gib
    assert _peak_rss_bytes(local_cluster.pid("worker", 0)) < 1 * gib  # never saw the data
