"""Session in process: target "" and servers living in the test's own process."""
from __future__ import annotations

import collections
import threading
import time

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.master_worker.master import Master

pytestmark = pytest.mark.timeout(60)

Pair = collections.namedtuple("Pair", "first second")


@pytest.fixture
def graph():
    with tf.Graph().as_default() as g:
        yield g


@pytest.fixture
def local_server():
    server = tf.distribute.Server.create_local_server()
    yield server
    server.stop()


# -- fetches ---------------------------------------------------------------

def test_run_single_tensor_returns_numpy(graph):
    c = tf.constant([1.0, 2.0]) * 3.0
    with tf.Session() as sess:
        out = sess.run(c)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, [3.0, 6.0])


def test_run_scalar_returns_numpy_scalar(graph):
    with tf.Session() as sess:
        out = sess.run(tf.constant(2.0) + 1.0)
    assert out == 3.0 and np.ndim(out) == 0


def test_nested_fetches_keep_their_structure(graph):
    a = tf.constant(1.0, name="a")
    b = tf.constant([2.0, 3.0], name="b")
    op = tf.no_op(name="nothing")
    with tf.Session() as sess:
        out = sess.run({"list": [a, (b, op)], "pair": Pair(a, b), "name": "b:0"})
    assert set(out) == {"list", "pair", "name"}
    assert isinstance(out["list"], list) and isinstance(out["list"][1], tuple)
    assert out["list"][0] == 1.0
    np.testing.assert_allclose(out["list"][1][0], [2.0, 3.0])
    assert out["list"][1][1] is None  # an operation fetches None
    assert isinstance(out["pair"], Pair) and out["pair"].first == 1.0
    np.testing.assert_allclose(out["name"], [2.0, 3.0])


def test_fetching_an_operation_returns_none(graph):
    tf.Variable(1.0)
    with tf.Session() as sess:
        assert sess.run(tf.global_variables_initializer()) is None


def test_same_tensor_fetched_twice(graph):
    a = tf.constant(5.0)
    with tf.Session() as sess:
        assert sess.run([a, a, (a,)]) == [5.0, 5.0, (5.0,)]


def test_fetch_none_is_a_type_error(graph):
    with tf.Session() as sess:
        with pytest.raises(TypeError):
            sess.run(None)
        with pytest.raises(TypeError):
            sess.run([tf.constant(1.0), None])


def test_fetch_unknown_name_is_an_error(graph):
    tf.constant(1.0, name="c")
    with tf.Session() as sess:
        with pytest.raises((KeyError, ValueError)):
            sess.run("nope:0")


def test_fetch_from_another_graph_is_an_error(graph):
    with tf.Graph().as_default():
        other = tf.constant(1.0)
    with tf.Session() as sess:
        with pytest.raises(ValueError):
            sess.run(other)


# -- feeds -----------------------------------------------------------------

def test_feed_by_tensor_and_by_name(graph):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    total = tf.reduce_sum(x)
    with tf.Session() as sess:
        assert sess.run(total, {x: np.ones((3, 2))}) == 6.0
        assert sess.run(total, {"x:0": [[1.0, 2.0]]}) == 3.0


def test_feed_a_non_placeholder_tensor(graph):
    a = tf.constant(1.0)
    b = a * 2.0
    with tf.Session() as sess:
        assert sess.run(b, {a: 10.0}) == 20.0


def test_fed_value_can_be_fetched(graph):
    x = tf.placeholder(tf.float32, [2])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(x, {x: [1.0, 2.0]}), [1.0, 2.0])


def test_feed_shape_mismatch_names_tensor_and_shapes(graph):
    x = tf.placeholder(tf.float32, [None, 2], name="inputs")
    y = tf.identity(x)
    with tf.Session() as sess:
        with pytest.raises(ValueError) as info:
            sess.run(y, {x: np.ones((3, 3))})
    message = str(info.value)
    assert "inputs:0" in message and "(3, 3)" in message


def test_a_feed_shape_checked_once_is_checked_again_after_set_shape(graph):
    # The session keeps the feed shapes it found compatible, against the
    # tensor's static shape then: set_shape narrows it, so the check runs anew.
    x = tf.placeholder(tf.float32, [None, 2], name="inputs")
    y = tf.identity(x)
    with tf.Session() as sess:
        for _ in range(2):
            np.testing.assert_array_equal(sess.run(y, {x: np.ones((3, 2))}), np.ones((3, 2)))
        x.set_shape([4, 2])
        with pytest.raises(ValueError, match=r"shape \(3, 2\).*inputs:0"):
            sess.run(y, {x: np.ones((3, 2))})
        np.testing.assert_array_equal(sess.run(y, {x: np.ones((4, 2))}), np.ones((4, 2)))


def test_the_master_refuses_a_feed_of_another_dtype_after_right_ones(graph):
    # The master keeps the (tensor, dtype) feeds it found right; a request that
    # then feeds another dtype is still refused (a client sends converted feeds,
    # so this is a peer's mistake: run_step is called as a transport would).
    x = tf.placeholder(tf.float32, [2], name="fed")
    y = x * 2.0
    with tf.Session() as sess:
        sess.run(y, {x: [1.0, 2.0]})
        master, handle = sess._master, sess._handle
        for _ in range(2):
            values, _ = master.run_step(handle, {"fed:0": np.ones(2, np.float32)}, [y.name], [])
            np.testing.assert_array_equal(values[0], [2.0, 2.0])
        with pytest.raises(errors.InvalidArgumentError,
                           match="Feed for tensor fed:0 is int32, but the graph's fed:0 is float32"):
            master.run_step(handle, {"fed:0": np.ones(2, np.int32)}, [y.name], [])


def test_feed_bad_dtype_names_tensor(graph):
    x = tf.placeholder(tf.float32, [], name="num")
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="num:0"):
            sess.run(x, {x: "not a number"})


def test_feed_key_unknown_name_is_value_error(graph):
    x = tf.placeholder(tf.float32, [])
    with tf.Session() as sess:
        with pytest.raises(ValueError):
            sess.run(x, {"missing:0": 1.0})


def test_feed_value_cannot_be_a_tensor(graph):
    x = tf.placeholder(tf.float32, [])
    with tf.Session() as sess:
        with pytest.raises(TypeError):
            sess.run(x, {x: tf.constant(1.0)})


def test_missing_feed_is_invalid_argument(graph):
    x = tf.placeholder(tf.float32, [], name="unfed")
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="unfed"):
            sess.run(x + 1.0)


# -- lifecycle -------------------------------------------------------------

def test_closed_session_refuses_to_run(graph):
    c = tf.constant(1.0)
    sess = tf.Session()
    sess.close()
    sess.close()  # idempotent
    with pytest.raises(RuntimeError):
        sess.run(c)


def test_context_manager_is_default_and_closes(graph):
    c = tf.constant(4.0)
    with tf.Session() as sess:
        assert tf.get_default_session() is sess
        assert c.eval() == 4.0
    assert tf.get_default_session() is None
    with pytest.raises(RuntimeError):
        sess.run(c)


def test_interactive_session_becomes_default(graph):
    c = tf.constant(7.0)
    sess = tf.InteractiveSession()
    try:
        assert tf.get_default_session() is sess
        assert c.eval() == 7.0
        tf.no_op().run()
    finally:
        sess.close()
    assert tf.get_default_session() is None


def test_session_graph_argument(graph):
    with tf.Graph().as_default() as other:
        c = tf.constant(3.0)
    sess = tf.Session(graph=other)
    assert sess.graph is other
    assert sess.run(c) == 3.0
    sess.close()


def test_bogus_target_is_not_found():
    with pytest.raises(errors.NotFoundError):
        tf.Session("bogus")


def test_config_must_be_a_config_proto():
    with pytest.raises(TypeError):
        tf.Session(config={"device_count": {"CPU": 2}})


def test_list_devices_in_process(graph):
    with tf.Session() as sess:
        devices = sess.list_devices()
    assert [d.name for d in devices] == ["/job:localhost/replica:0/task:0/device:CPU:0"]
    assert devices[0].device_type == "CPU"


def test_list_devices_device_count(graph):
    config = tf.ConfigProto(device_count={"CPU": 3})
    with tf.Session(config=config) as sess:
        names = [d.name for d in sess.list_devices()]
    assert names == [f"/job:localhost/replica:0/task:0/device:CPU:{i}" for i in range(3)]


# -- the graph travels once, then grows ---------------------------------------

def test_graph_is_sent_once_then_extended_with_new_nodes(graph, monkeypatch):
    created, extended = [], []
    real_create, real_extend = Master.create_session, Master.extend_session

    def create(self, nodes, config=None, target=None):
        created.append([n.name for n in nodes])
        return real_create(self, nodes, config, target)

    def extend(self, handle, nodes, version):
        extended.append([n.name for n in nodes])
        return real_extend(self, handle, nodes, version)

    monkeypatch.setattr(Master, "create_session", create)
    monkeypatch.setattr(Master, "extend_session", extend)
    a = tf.constant(1.0, name="a")
    with tf.Session() as sess:
        sess.run(a)
        sess.run(a)
        b = tf.add(a, 1.0, name="b")
        assert sess.run(b) == 2.0
        sess.run(b)
    assert len(created) == 1 and "a" in created[0]
    assert len(extended) == 1
    assert "b" in extended[0] and "a" not in extended[0]


def test_run_is_pruned_to_what_fetches_need(graph):
    x = tf.placeholder(tf.float32, [], name="never_fed")
    tf.identity(x, name="unused")
    a = tf.constant(2.0, name="a")
    b = tf.multiply(a, 3.0, name="b")
    metadata = tf.RunMetadata()
    with tf.Session() as sess:
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        assert sess.run(b, options=options, run_metadata=metadata) == 6.0
    ran = {n.node_name for d in metadata.step_stats.dev_stats for n in d.node_stats}
    assert "b" in ran and "a" in ran
    assert "unused" not in ran and "never_fed" not in ran


def test_feeding_cuts_the_graph(graph):
    x = tf.placeholder(tf.float32, [], name="never_fed")
    y = tf.identity(x, name="y")
    z = tf.add(y, 1.0, name="z")
    with tf.Session() as sess:
        assert sess.run(z, {y: 1.0}) == 2.0


# -- state -----------------------------------------------------------------

def test_uninitialized_variable_is_failed_precondition(graph):
    v = tf.Variable(1.0, name="lonely")
    with tf.Session() as sess:
        with pytest.raises(errors.FailedPreconditionError, match="lonely"):
            sess.run(v)


def test_variables_persist_across_steps(graph):
    v = tf.Variable(0.0)
    inc = tf.assign_add(v, 1.0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(inc)
        assert sess.run(v) == 3.0


def test_private_sessions_do_not_share_state(graph):
    v = tf.Variable(5.0, name="private")
    with tf.Session() as first:
        first.run(v.initializer)
    with tf.Session() as second:
        with pytest.raises(errors.FailedPreconditionError):
            second.run(v)


def test_state_is_shared_by_sessions_and_graphs_on_one_server(local_server):
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="shared_v")
        inc = tf.assign_add(v, 10.0)
        with tf.Session(local_server.target) as sess:
            sess.run(v.initializer)
            sess.run(inc)
    with tf.Graph().as_default():
        same = tf.Variable(0.0, name="shared_v")  # found by node name, not re-initialized
        with tf.Session(local_server.target) as sess:
            assert sess.run(same) == 11.0


def test_isolate_session_state(local_server):
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="iso_v")
        with tf.Session(local_server.target) as shared:
            shared.run(v.initializer)
        config = tf.ConfigProto(isolate_session_state=True)
        with tf.Session(local_server.target, config=config) as isolated:
            with pytest.raises(errors.FailedPreconditionError):
                isolated.run(v)
            isolated.run(tf.assign(v, 2.0))
            assert isolated.run(v) == 2.0
        with tf.Session(local_server.target) as shared:
            assert shared.run(v) == 1.0


def test_reset_clears_containers_and_aborts_sessions(local_server):
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="reset_v")
        with tf.container("keep"):
            kept = tf.Variable(2.0, name="kept_v")
        sess = tf.Session(local_server.target)
        sess.run([v.initializer, kept.initializer])
        tf.Session.reset(local_server.target, ["localhost"])
        with pytest.raises(errors.AbortedError):
            sess.run(v)
        with tf.Session(local_server.target) as fresh:
            with pytest.raises(errors.FailedPreconditionError):
                fresh.run(v)
            assert fresh.run(kept) == 2.0
        tf.Session.reset(local_server.target)
        with tf.Session(local_server.target) as fresh:
            with pytest.raises(errors.FailedPreconditionError):
                fresh.run(kept)


def test_reset_unknown_target_is_not_found():
    with pytest.raises(errors.NotFoundError):
        tf.Session.reset("bogus")


# -- devices, threads, tracing -----------------------------------------------

def test_device_count_places_ops_on_pinned_cpu(graph):
    with tf.device("/cpu:1"):
        a = tf.constant([1.0, 2.0], name="a1")
        b = tf.multiply(a, 2.0, name="b1")
    with tf.device("/cpu:0"):
        c = tf.add(b, 1.0, name="c0")
    metadata = tf.RunMetadata()
    config = tf.ConfigProto(device_count={"CPU": 2})
    with tf.Session(config=config) as sess:
        out = sess.run(c, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                       run_metadata=metadata)
    np.testing.assert_allclose(out, [3.0, 5.0])
    where = {n.node_name: d.device for d in metadata.step_stats.dev_stats
             for n in d.node_stats}
    assert where["b1"] == "/job:localhost/replica:0/task:0/device:CPU:1"
    assert where["c0"] == "/job:localhost/replica:0/task:0/device:CPU:0"


def test_pinning_to_a_missing_device_names_it(graph):
    with tf.device("/cpu:5"):
        a = tf.constant(1.0, name="far_away")
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="far_away"):
            sess.run(a)


def test_soft_placement_falls_back(graph):
    with tf.device("/cpu:5"):
        a = tf.add(tf.constant(1.0), 1.0, name="soft")
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        assert sess.run(a) == 2.0


def test_full_trace_fills_step_stats_and_partition_graphs(graph):
    a = tf.constant(np.ones((4, 3), np.float32), name="ones")
    b = tf.reduce_sum(a, name="total")
    metadata = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(b, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=metadata)
    devices = [d.device for d in metadata.step_stats.dev_stats]
    assert devices == ["/job:localhost/replica:0/task:0/device:CPU:0"]
    stats = {n.node_name: n for n in metadata.step_stats.dev_stats[0].node_stats}
    ones = stats["ones"]
    assert ones.all_start_micros > 0
    assert ones.all_end_rel_micros >= ones.op_end_rel_micros >= 0
    desc = ones.output[0].tensor_description
    assert [d.size for d in desc.shape.dim] == [4, 3]
    assert desc.allocation_description.requested_bytes == 48
    assert len(metadata.partition_graphs) >= 1
    assert any(n.name == "total" for g in metadata.partition_graphs for n in g.node)


def test_no_trace_leaves_run_metadata_empty(graph):
    metadata = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(tf.constant(1.0), run_metadata=metadata)
    assert len(metadata.step_stats.dev_stats) == 0


def test_log_device_placement_writes_to_stderr(graph, capfd):
    tf.add(tf.constant(1.0, name="logged_a"), 2.0, name="logged_sum")
    with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
        sess.run("logged_sum:0")
    err = capfd.readouterr().err
    assert "logged_sum" in err and "/job:localhost/replica:0/task:0/device:CPU:0" in err


# -- errors, timeouts, cancellation --------------------------------------------

def test_runtime_error_carries_class_and_node_name(graph):
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.reshape(x, [3], name="bad_reshape")
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="bad_reshape") as info:
            sess.run(y, {x: np.ones(4, np.float32)})
    assert info.value.node_name == "bad_reshape"


def test_session_survives_a_failed_step(graph):
    x = tf.placeholder(tf.float32, [None])
    y = tf.reshape(x, [3])
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError):
            sess.run(y, {x: np.ones(4)})
        np.testing.assert_allclose(sess.run(y, {x: np.ones(3)}), np.ones(3))


def test_operation_timeout_on_empty_queue(graph):
    q = tf.FIFOQueue(4, [tf.float32], shapes=[[]])
    deq = q.dequeue()
    config = tf.ConfigProto(operation_timeout_in_ms=300)
    with tf.Session(config=config) as sess:
        start = time.monotonic()
        with pytest.raises(errors.DeadlineExceededError):
            sess.run(deq)
        assert time.monotonic() - start < 5


def test_run_options_timeout_on_empty_queue(graph):
    q = tf.FIFOQueue(4, [tf.float32], shapes=[[]])
    deq = q.dequeue()
    enq = q.enqueue([3.0])
    with tf.Session() as sess:
        start = time.monotonic()
        with pytest.raises(errors.DeadlineExceededError):
            sess.run(deq, options=tf.RunOptions(timeout_in_ms=200))
        assert time.monotonic() - start < 5
        sess.run(enq)  # the session still works after a timeout
        assert sess.run(deq) == 3.0


def test_close_from_another_thread_cancels_blocked_run(graph):
    q = tf.FIFOQueue(4, [tf.float32], shapes=[[]])
    deq = q.dequeue()
    sess = tf.Session()
    sess.run(q.size())  # the graph is on the master before the blocking step
    timer = threading.Timer(0.3, sess.close)
    timer.start()
    try:
        with pytest.raises(errors.CancelledError):
            sess.run(deq)
    finally:
        timer.join()


def test_inter_op_parallelism_config_runs(graph):
    parts = [tf.reduce_sum(tf.constant(np.full((64, 64), i, np.float32))) for i in range(4)]
    total = tf.add_n(parts) if hasattr(tf, "add_n") else parts[0] + parts[1] + parts[2] + parts[3]
    for threads in (1, 2):
        config = tf.ConfigProto(inter_op_parallelism_threads=threads)
        with tf.Session(config=config) as sess:
            assert sess.run(total) == 64 * 64 * 6


def test_fetched_arrays_are_writable_copies_of_runtime_state():
    with tf.Graph().as_default():
        c = tf.constant([1.0, 2.0])
        v = tf.Variable([3.0, 4.0])
        with tf.Session() as sess:
            sess.run(v.initializer)
            c_val, v_val = sess.run([c, v])
            c_val[0] = 100.0
            v_val[0] = 100.0
            np.testing.assert_array_equal(sess.run([c, v]), [[1.0, 2.0], [3.0, 4.0]])
