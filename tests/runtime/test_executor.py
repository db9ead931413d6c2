"""The executor: dataflow order, inter-op parallelism, first error cancels the step."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.framework.node import Node
from nbcluster.kernels import load_all
from nbcluster.master_worker import send_recv  # noqa: F401 - registers _Send and _Recv
from nbcluster.master_worker.rendezvous import StepRendezvous, key_of
from nbcluster.runtime import executor as executor_module
from nbcluster.runtime.devices import local_devices
from nbcluster.runtime.executor import Executor
from nbcluster.runtime.resources import ResourceMgr
from nbcluster.runtime.step import StepContext

pytestmark = pytest.mark.timeout(60)

FULL_TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)


def _two_heavy_branches():
    """Two independent chains of matmuls, joined at the end."""
    rng = np.random.default_rng(0)
    branches = []
    for b in range(2):
        x = tf.constant(rng.standard_normal((300, 300)).astype(np.float32), name=f"x{b}")
        for i in range(3):
            x = tf.matmul(x, x, name=f"branch{b}_mm{i}") * 1e-3
        branches.append(tf.reduce_sum(x))
    return branches[0] + branches[1]


def _intervals(metadata, prefix: str) -> list:
    out = []
    for dev in metadata.step_stats.dev_stats:
        for n in dev.node_stats:
            if n.node_name.startswith(prefix):
                start = n.all_start_nanos or n.all_start_micros * 1000
                end = start + (n.all_end_rel_nanos or n.all_end_rel_micros * 1000)
                out.append((start, end, n.thread_id))
    return out


def _overlap(a: list, b: list) -> int:
    """Total nanoseconds during which an interval of `a` and one of `b` both run."""
    return sum(max(0, min(e1, e2) - max(s1, s2)) for s1, e1, _ in a for s2, e2, _ in b)


def _trace(total, threads: int):
    config = tf.ConfigProto(inter_op_parallelism_threads=threads)
    with tf.Session(config=config) as sess:
        sess.run(total)  # warm up: plan and register once
        metadata = tf.RunMetadata()
        sess.run(total, options=FULL_TRACE, run_metadata=metadata)
    return _intervals(metadata, "branch0_"), _intervals(metadata, "branch1_")


def test_two_threads_run_independent_branches_concurrently():
    with tf.Graph().as_default():
        total = _two_heavy_branches()
        # Scheduling is up to the OS; a few tries make "never overlapped" a real failure.
        for _ in range(5):
            first, second = _trace(total, threads=2)
            assert len(first) == 3 and len(second) == 3
            if _overlap(first, second) > 0:
                break
        else:
            pytest.fail(f"branches never overlapped with 2 threads: {first} {second}")
        threads = {t for _, _, t in first + second}
        assert len(threads) >= 2


def test_one_thread_runs_branches_one_at_a_time():
    with tf.Graph().as_default():
        total = _two_heavy_branches()
        for _ in range(3):
            first, second = _trace(total, threads=1)
            assert len(first) == 3 and len(second) == 3
            assert _overlap(first, second) == 0
            assert len({t for _, _, t in first + second}) == 1


def test_results_do_not_depend_on_parallelism():
    with tf.Graph().as_default():
        total = _two_heavy_branches()
        results = []
        for threads in (1, 2, 4):
            with tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=threads)) as s:
                results.append(s.run(total))
        np.testing.assert_allclose(results[0], results[1], rtol=1e-5)
        np.testing.assert_allclose(results[0], results[2], rtol=1e-5)


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_first_error_cancels_a_blocked_branch(threads):
    with tf.Graph().as_default():
        q = tf.FIFOQueue(4, [tf.float32], shapes=[[]])
        blocked = q.dequeue()
        x = tf.placeholder(tf.float32, [None])
        bad = tf.reshape(x, [3], name="bad_reshape")
        heavy = tf.matmul(tf.ones([200, 200]), tf.ones([200, 200]))
        config = tf.ConfigProto(inter_op_parallelism_threads=threads)
        with tf.Session(config=config) as sess:
            start = time.monotonic()
            with pytest.raises(errors.InvalidArgumentError) as info:
                sess.run([blocked, bad, heavy], {x: np.ones(4, np.float32)})
            assert time.monotonic() - start < 10
            assert info.value.node_name == "bad_reshape"
            # The step is over: the queue still works for the next one.
            sess.run(q.enqueue([1.0]))
            assert sess.run(blocked) == 1.0


def test_blocked_branches_do_not_starve_the_rest():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(8, [tf.float32], shapes=[[]])
        waits = [q.dequeue() for _ in range(3)]
        fill = q.enqueue_many([[1.0, 2.0, 3.0]])
        config = tf.ConfigProto(inter_op_parallelism_threads=2,
                                operation_timeout_in_ms=20000)
        with tf.Session(config=config) as sess:
            got = sess.run(waits + [fill])
    assert sorted(got[:3]) == [1.0, 2.0, 3.0]


# -- the executor on its own ---------------------------------------------------

def _executor(graph, parallelism: int = 1) -> Executor:
    device = local_devices("localhost", 0)[0]
    nodes = [op.to_node().with_changes(device=device.name) for op in graph.get_operations()]
    return Executor(nodes, device, parallelism)


def _context(collect_stats: bool = False) -> StepContext:
    return StepContext(1, ResourceMgr(), "localhost", collect_stats=collect_stats)


def _closure(ops) -> list:
    """`ops` and everything they need, as placed nodes."""
    seen, stack = {}, list(ops)
    while stack:
        op = stack.pop()
        if op.name not in seen:
            seen[op.name] = op
            stack.extend(t.op for t in op.inputs)
            stack.extend(op.control_inputs)
    return list(seen.values())


def _executor_for(ops, parallelism: int = 1) -> Executor:
    load_all()  # as a Session does (a test run alone has made none)
    device = local_devices("localhost", 0)[0]
    nodes = [op.to_node().with_changes(device=device.name) for op in _closure(ops)]
    return Executor(nodes, device, parallelism)


def test_executor_plans_once_and_runs_many_steps():
    with tf.Graph().as_default():
        v = tf.Variable(0.0, name="counter")
        bump = tf.assign_add(v, 1.0, name="bump")
    resources = ResourceMgr()
    _executor_for([v.initializer]).run(StepContext(1, resources, "localhost"))
    step = _executor_for([bump.op])
    for i in range(5):
        step.run(StepContext(2 + i, resources, "localhost"))
    assert float(resources.lookup("localhost", "counter").read()) == 5.0


def test_a_variable_kernel_finds_its_resource_anew_after_a_clear():
    # VariableV2 keeps the resource it found while its ResourceMgr's generation
    # stays; a clear (Session.reset) drops it, so the next step sees a new one.
    with tf.Graph().as_default():
        v = tf.Variable(3.0, name="kept")
        bump = tf.assign_add(v, 1.0, name="bump")
    resources = ResourceMgr()
    init, step = _executor_for([v.initializer]), _executor_for([bump.op])
    init.run(StepContext(1, resources, "localhost"))
    step.run(StepContext(2, resources, "localhost"))
    first = resources.lookup("localhost", "kept")
    assert float(first.read()) == 4.0
    resources.clear()
    with pytest.raises(errors.FailedPreconditionError, match="uninitialized value kept"):
        step.run(StepContext(3, resources, "localhost"))
    init.run(StepContext(4, resources, "localhost"))
    step.run(StepContext(5, resources, "localhost"))
    assert resources.lookup("localhost", "kept") is not first
    assert float(resources.lookup("localhost", "kept").read()) == 4.0


def test_executor_stats_rows_cover_every_node():
    with tf.Graph().as_default() as g:
        a = tf.constant(2.0, name="a")
        tf.multiply(a, a, name="sq")
    executor = _executor(g)
    rows = executor.run(_context(collect_stats=True))
    names = {executor.nodes[i].name for i, *_ in rows}
    assert names == {op.name for op in g.get_operations()}


def _reads_bumps_and_forwards():
    v = tf.Variable(1.0, name="v")
    c = tf.constant(2.0, name="c")
    read = tf.identity(v, name="read")
    with tf.control_dependencies([read]):  # the read sees v before the bump
        bump = tf.assign_add(v, c, name="bump")
    fwd = tf.identity(tf.identity(c * 3.0, name="id1"), name="id2")
    with tf.control_dependencies([bump]):
        after = v.read_value()  # ... and this read (not v's snapshot v/read) after it
        done = tf.no_op(name="done")
    return v, tf.add(fwd, read, name="total"), after, done


def test_inline_program_skips_nodes_that_compute_nothing():
    # NoOps, Consts and Identities of values leave the planned inline run; a
    # variable's read stays (its place in the order decides what it sees).
    with tf.Graph().as_default():
        _, total, after, done = _reads_bumps_and_forwards()
    step = _executor_for([total.op, after.op, done])
    kept = {step.names[entry[0]] for entry in step._program}
    assert {"c", "id1", "id2", "read", "done"}.isdisjoint(kept)
    assert {"v/read", after.op.name, "bump", "mul", "total"} <= kept


@pytest.mark.parametrize("threads", [1, 2])
def test_skipped_nodes_keep_their_values_and_order(threads):
    with tf.Graph().as_default():
        v, total, after, done = _reads_bumps_and_forwards()
        config = tf.ConfigProto(inter_op_parallelism_threads=threads)
        with tf.Session(config=config) as sess:
            sess.run(v.initializer)
            for step in range(3):
                before = 1.0 + 2.0 * step
                got_total, got_after, _ = sess.run([total, after, done])
                assert (got_total, got_after) == (6.0 + before, before + 2.0)
            assert sess.run(v) == 7.0


def test_executor_rejects_unknown_inputs():
    from nbcluster.framework.node import Node
    device = local_devices("localhost", 0)[0]
    node = Node("orphan", "Identity", ("ghost",), device.name, {})
    with pytest.raises(errors.InvalidArgumentError, match="ghost"):
        Executor([node], device)


def test_executor_rejects_two_nodes_of_one_name():
    # Keyed by name, one of them would silently never run (a lost _Send hangs
    # its peer's step).
    from nbcluster.framework.node import Node
    device = local_devices("localhost", 0)[0]
    value = {"value": np.float32(1), "dtype": tf.float32}
    nodes = [Node("x", "Const", (), device.name, value), Node("x", "Const", (), device.name, value)]
    with pytest.raises(errors.InvalidArgumentError, match="'x' is not unique"):
        Executor(nodes, device)


@pytest.mark.parametrize("parallelism", [1, 2])
def test_executor_kernel_failure_names_node(parallelism):
    with tf.Graph().as_default():
        x = tf.placeholder_with_default(np.ones(4, np.float32), [None])
        bad = tf.reshape(x, [3], name="bad")
        fine = tf.matmul(tf.ones([50, 50]), tf.ones([50, 50]))
    executor = _executor_for([bad.op, fine.op], parallelism)
    with pytest.raises(errors.InvalidArgumentError, match="bad") as info:
        executor.run(_context())
    assert info.value.node_name == "bad"


def test_executor_unfed_placeholder_is_invalid_argument():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="want_feed")
        y = tf.identity(x)
    with pytest.raises(errors.InvalidArgumentError, match="want_feed"):
        _executor_for([y.op]).run(_context())


def _costly(executor, prefix: str) -> list:
    """Marks the nodes named `prefix`* as taking a second, the others nothing (a node
    preempted on a loaded host would otherwise look costly too)."""
    marked = [i for i, name in enumerate(executor.names) if name.startswith(prefix)]
    executor.cost[:] = [1.0 if i in marked else 0.0 for i in range(len(executor.cost))]
    return marked


def test_costly_kernels_in_one_chain_stay_on_the_calling_thread():
    # The forward and backward MatMuls of a layer need each other's results:
    # a pool thread would take each while this one only waits for it.
    with tf.Graph().as_default():
        x = first = tf.ones([64, 64])
        for i in range(3):
            x = tf.matmul(x, x, name=f"chain_mm{i}") * 1e-2
        # Cheap nodes made ready beside the chain, as a weight's read feeds a MatMul
        # and the update's other inputs.
        side = tf.add_n([tf.identity(first) for _ in range(4)])
        total = tf.reduce_sum(x) + tf.reduce_sum(side)
    executor = _executor_for([total.op], parallelism=2)
    executor.run(_context())
    assert len(_costly(executor, "chain_mm")) == 3
    rows = executor.run(_context(collect_stats=True))
    assert {thread for *_, thread, _ in rows} == {threading.get_ident()}


def test_independent_costly_kernels_still_get_threads():
    with tf.Graph().as_default():
        total = _two_heavy_branches()
    executor = _executor_for([total.op], parallelism=2)
    executor.run(_context())
    assert len(_costly(executor, "branch")) == 6
    main = threading.get_ident()
    for _ in range(5):  # a chain may finish before the pool's thread starts the other
        rows = executor.run(_context(collect_stats=True))
        if any(thread != main for *_, thread, _ in rows):
            break
        _costly(executor, "branch")
    else:
        pytest.fail("two independent costly branches never left the calling thread")


def test_any_independent_sees_unordered_pairs_only():
    from nbcluster.runtime.executor import _any_independent
    # 0 -> 1 -> 3, 0 -> 2 -> 3: 1 and 2 are unordered, 0 precedes all, 3 follows all.
    successors = [(1, 2), (3,), (3,), ()]
    assert _any_independent((1, 2), successors)
    assert not _any_independent((0, 1, 3), successors)
    assert not _any_independent((0, 3), successors)
    assert _any_independent((0, 1, 2, 3), successors)


def test_kernels_on_pool_threads_do_not_warn_either():
    # numpy's warnings are off per run and per pool chain, not per kernel.
    import warnings
    with tf.Graph().as_default():
        logs = [tf.log(tf.zeros([4]) * tf.constant(float(b)), name=f"branch{b}_log")
                for b in range(2)]
        total = tf.add_n(logs)
    executor = _executor_for([total.op], parallelism=2)
    executor.run(_context())
    main = threading.get_ident()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for _ in range(20):
            _costly(executor, "branch")
            rows = executor.run(_context(collect_stats=True))
            logged = [(thread, out) for i, _, _, thread, out in rows
                      if executor.names[i].endswith("_log")]
            assert all(np.all(out[0] == -np.inf) for _, out in logged)
            if any(thread != main for thread, _ in logged):
                break
        else:
            pytest.fail("no log kernel ever ran on a pool thread")


# -- Recvs whose tensors land here (a PS worker's step) ------------------------

def _pair_attrs(device: str, tensor: str) -> dict:
    return {"send_device": device, "send_device_incarnation": 1, "recv_device": device,
            "tensor_name": tensor, "tensor_type": tf.float32}


def _landing_plan(device) -> tuple:
    """recv_b is ready first, but "b" is sent only once "a" (from another thread,
    as a peer's stream would bring it) has landed and been used: a run in
    topological order alone would wait for "b" forever."""
    load_all()
    d = device.name
    with tf.Graph().as_default():
        c = tf.constant(3.0, name="c").op.to_node().with_changes(device=d)
    nodes = [
        Node("recv_b", "_Recv", (), d, _pair_attrs(d, "b")),
        Node("out", "Mul", ("recv_b", "c"), d, {"T": tf.float32}),
        Node("send_out", "_Send", ("out",), d, _pair_attrs(d, "out")),
        c,
        Node("recv_a", "_Recv", (), d, _pair_attrs(d, "a")),
        Node("y", "AddV2", ("recv_a", "c"), d, {"T": tf.float32}),
        Node("send_b", "_Send", ("y",), d, _pair_attrs(d, "b")),
    ]
    return nodes, key_of(_pair_attrs(d, "a")), key_of(_pair_attrs(d, "out"))


def _later(seconds: float, fn) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(seconds), fn()), daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("parallelism", [1, 2])
def test_recvs_that_land_here_run_in_the_order_they_land_on_the_calling_thread(
        parallelism, monkeypatch):
    device = local_devices("localhost", 0)[0]
    nodes, key_a, key_out = _landing_plan(device)
    plan = Executor(nodes, device, parallelism)
    # No pool thread: one thread that waits for whichever tensor lands next.
    monkeypatch.setattr(executor_module._POOL, "submit", lambda *a: pytest.fail(
        "a landing Recv took a pool thread"))
    for step in range(3):
        rendezvous = StepRendezvous(step)
        ctx = StepContext(step, ResourceMgr(), "localhost", rendezvous=rendezvous,
                          collect_stats=True, deadline=time.monotonic() + 20)
        sender = _later(0.05, lambda: rendezvous.send(key_a, np.float32(step)))
        rows = plan.run(ctx)
        sender.join(5)
        assert float(rendezvous.recv_local(key_out, ctx)) == (step + 3.0) * 3.0
        assert {thread for *_, thread, _ in rows} == {threading.get_ident()}
        assert {plan.names[i] for i, *_ in rows} == {n.name for n in nodes}


def test_a_step_cancelled_while_its_recvs_wait_raises_its_error():
    device = local_devices("localhost", 0)[0]
    nodes, _, _ = _landing_plan(device)
    plan = Executor(nodes, device, 1)
    ctx = StepContext(1, ResourceMgr(), "localhost", rendezvous=StepRendezvous(1),
                      deadline=time.monotonic() + 20)
    _later(0.05, lambda: ctx.cancellation.cancel(
        errors.CancelledError(None, None, "the peer went away")))
    start = time.monotonic()
    with pytest.raises(errors.CancelledError, match="the peer went away"):
        plan.run(ctx)
    assert time.monotonic() - start < 10
