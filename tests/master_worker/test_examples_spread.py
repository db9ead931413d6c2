"""Every example graph runs on one task and spread across three, with equal results.

Each example builds one graph covering an op family of the suite (tests/ops/)
and returns what to run. It runs three ways and the results must agree:
in process (`Session("")`), on a one-task cluster (one `python -m
nbcluster.server` process), and on a ps + two workers cluster with every op
built under a device function that deals ops round-robin to the three tasks
(and again under one that picks a task by a hash of the op's name, with the
other worker as master).
Variables and queues need no care: their initializers, reads, updates and
queue ops are built under `colocate_with`, which hides the device function,
and the placer keeps ref/resource edges together. A FULL_TRACE of the spread
run shows all three tasks did work, each op where the device function put it.

Ints, strings and bools must be equal exactly; floats to within a rounding
error (the same kernels run, so in practice they are equal too). Random ops
draw from a generator each kernel seeds from its (seed, seed2) attrs, so the
same seeds give the same numbers wherever the op is placed.

Clusters are started once per module; every example uses its own name scope,
so the variables and queues it creates (shared on a server by name) are its own.
"""
from __future__ import annotations

import itertools
import zlib
from typing import Callable

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.launch import Cluster

pytestmark = pytest.mark.timeout(60)

PS = "/job:ps/replica:0/task:0/device:CPU:0"
W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"
SPREAD_TASKS = {"/job:ps/task:0": PS, "/job:worker/task:0": W0, "/job:worker/task:1": W1}
FULL_TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
TOL = {np.float16: 2e-3, np.float32: 1e-5, np.float64: 1e-12}

# name -> build(): (fetches, feed_dict, setup); setup is [(fetch, feed_dict)],
# run in order before the fetches, and their results are compared as well.
EXAMPLES: dict[str, Callable] = {}


def example(build: Callable) -> Callable:
    assert build.__name__ not in EXAMPLES
    EXAMPLES[build.__name__] = build
    return build


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# -- the examples ------------------------------------------------------------------
@example
def math_broadcast_and_operators():
    a = _rng(1).uniform(1, 3, (2, 3)).astype(np.float32)
    b = _rng(2).uniform(1, 3, (3,)).astype(np.float32)
    x, y = tf.constant(a), tf.constant(b)
    p = tf.constant(_rng(3).uniform(-2, 2, (4, 1, 3)).astype(np.float64))
    q = tf.constant(_rng(4).uniform(-2, 2, (1, 5, 1)).astype(np.float64))
    fetches = [x + y, x - y, x * y, x / y, -x, abs(-x), x ** 2.0, 1.0 / x, 2.0 * x - 1.0,
               x < y, x <= y, x >= y, tf.maximum(p, q), tf.minimum(p, q), tf.add(p, q),
               tf.subtract(p, q), tf.multiply(p, q), tf.divide(p, q),
               tf.square(x), tf.sqrt(x), tf.exp(-x), tf.log(x), tf.tanh(p),
               tf.pow(x, y), tf.equal(x, tf.constant(a)), tf.not_equal(x, 2.0),
               tf.range(1, 2.0, 0.25)]
    return fetches, None, []


@example
def matmul_with_transposes():
    a = _rng(5).standard_normal((3, 4)).astype(np.float32)
    b = _rng(6).standard_normal((4, 2)).astype(np.float32)
    ta, tb = tf.constant(a.T), tf.constant(b.T)
    ca, cb = tf.constant(a), tf.constant(b)
    batch_a = tf.constant(_rng(7).standard_normal((2, 1, 3, 4)))
    batch_b = tf.constant(_rng(8).standard_normal((5, 4, 2)))
    ints = tf.constant(_rng(9).integers(-3, 3, (3, 4)).astype(np.int64))
    fetches = [tf.matmul(ca, cb), tf.matmul(ta, cb, transpose_a=True),
               tf.matmul(ca, tb, transpose_b=True),
               tf.matmul(ta, tb, transpose_a=True, transpose_b=True),
               ca @ tf.transpose(ca), tf.matmul(batch_a, batch_b),
               tf.matmul(ints, ints, transpose_b=True)]
    return fetches, None, []


@example
def reductions_with_axis_and_keepdims():
    x = tf.constant(_rng(10).standard_normal((2, 3, 4)).astype(np.float32))
    i = tf.constant(_rng(11).integers(-9, 9, (2, 3, 4)).astype(np.int64))
    fetches = []
    for fn in (tf.reduce_sum, tf.reduce_mean, tf.reduce_max, tf.reduce_min):
        for axis in (None, 0, -1, [0, 2]):
            for keepdims in (False, True):
                fetches += [fn(x, axis=axis, keepdims=keepdims),
                            fn(i, axis=axis, keepdims=keepdims)]
    fetches += [tf.argmax(x, 1), tf.argmin(i, 0, output_type=tf.int32)]
    return fetches, None, []


@example
def array_shape_ops():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    n = tf.placeholder(tf.int32, [], name="n")
    anything = tf.placeholder(tf.int64, None, name="anything")  # rank known at run time
    c = tf.constant(np.arange(24, dtype=np.int32).reshape(2, 3, 4))
    fetches = [tf.reshape(c, [4, -1]), tf.reshape(c, [-1]), tf.transpose(c, [2, 0, 1]),
               tf.transpose(x), tf.concat([x, x * 2.0], 0), tf.concat([x, -x], 1),
               tf.stack([x, x + 1.0], axis=1), tf.stack([n, n * 2, 7]),
               tf.fill([2, n], 1.5), tf.fill(tf.stack([n, 2]), np.int64(3)),
               tf.shape(x), tf.size(x), tf.rank(c), tf.shape(c),
               tf.cast(x, tf.int32), tf.cast(c, tf.float16), tf.cast(x, tf.bool),
               tf.expand_dims(x, 0), tf.squeeze(tf.expand_dims(x, 2), [2]),
               tf.zeros_like(x), tf.ones_like(x), tf.ones_like(c), tf.zeros([n, 2]),
               tf.ones([2, 2], tf.int64), tf.rank(anything), tf.shape(anything)]
    feed = {x: _rng(12).uniform(-3, 3, (4, 3)).astype(np.float32), n: 3,
            anything: np.arange(6).reshape(1, 2, 3)}
    return fetches, feed, []


@example
def nn_activations_and_softmax_xent():
    logits_val = _rng(13).standard_normal((4, 5)).astype(np.float32)
    labels_val = np.eye(5, dtype=np.float32)[[0, 3, 1, 4]]
    logits = tf.placeholder(tf.float32, [None, 5], name="logits")
    labels = tf.constant(labels_val)
    wide = tf.constant(_rng(14).standard_normal((2, 3, 4)))
    fetches = [tf.nn.relu(logits), tf.nn.sigmoid(logits), tf.nn.softmax(logits),
               tf.nn.softmax(wide, axis=1), tf.nn.tanh(logits),
               tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits),
               tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits * 3.0),
               tf.nn.relu(tf.constant([-2, 0, 5], tf.int32))]
    return fetches, {logits: logits_val}, []


def _random_fetches():
    return [tf.random_normal([3, 2]), tf.random_uniform([4], -1.0, 1.0),
            tf.random_uniform([5], 0, 100, dtype=tf.int32),
            tf.random_uniform([5], -7, 7, dtype=tf.int64),
            tf.truncated_normal([6], stddev=2.0, dtype=tf.float64),
            tf.random_normal([3], mean=1.0, stddev=0.5, seed=11, dtype=tf.float16),
            tf.random_uniform([2, 2], seed=5) * 2.0 + 1.0]


@example
def random_with_graph_seed():
    # The second run draws the next numbers from the same per-kernel generator.
    tf.set_random_seed(42)
    fetches = _random_fetches()
    return fetches, None, [(fetches, None)]


@example
def random_with_op_seeds_only():
    fetches = [tf.random_normal([4], seed=3), tf.random_uniform([4], seed=3),
               tf.truncated_normal([2, 2], seed=4),
               tf.random_uniform([3], 1, 9, dtype=tf.int64, seed=5)]
    return fetches, None, [(fetches, None)]


@example
def variables_assign_sequences():
    v = tf.Variable(np.arange(4, dtype=np.float32), name="v")
    counter = tf.Variable(tf.constant(10, tf.int64), name="counter")
    w = tf.Variable(lambda: tf.random_normal([2, 2], seed=1, dtype=tf.float64), name="w")
    d = tf.Variable(v.initial_value * 2.0, name="derived")
    step = tf.placeholder(tf.float32, [4], name="step")
    setup = [(tf.global_variables_initializer(), None),
             (v.assign(np.ones(4, np.float32) * 3.0), None),
             (v.assign_add(step), {step: np.arange(4, dtype=np.float32)}),
             (tf.assign_sub(v, [1.0, 1.0, 1.0, 1.0]), None),
             (counter.assign_add(5), None), (tf.assign_sub(counter, 2), None),
             (tf.assign(w, w * 2.0), None), (d.assign_add(v), None)]
    fetches = [v, counter, w, d, v.read_value() + 1.0, tf.is_variable_initialized(w)]
    return fetches, None, setup


@example
def fifo_queue_enqueue_and_dequeue_many():
    q = tf.FIFOQueue(10, [tf.float32, tf.int32, tf.string], shapes=[[2], [], []], name="q")
    xs = tf.placeholder(tf.float32, [None, 2], name="xs")
    enqueue = q.enqueue_many([xs, tf.range(4), tf.constant(["a", "b", "c", "d"])])
    one = q.enqueue([[9.0, 9.5], 9, "z"])
    # Size is fetched in a run of its own: beside a dequeue its order is undefined.
    setup = [(enqueue, {xs: np.arange(8, dtype=np.float32).reshape(4, 2)}), (one, None),
             (q.size(), None), (q.dequeue(), None), (q.dequeue_many(3), None),
             (q.size(), None), (q.close(), None)]
    return q.dequeue_many(1), None, setup  # a closed queue still hands out what it holds


@example
def placeholders_with_feeds():
    x = tf.placeholder(tf.float64, [None, None], name="x")
    k = tf.placeholder(tf.int64, [], name="k")
    s = tf.placeholder(tf.string, [2], name="s")
    flag = tf.placeholder(tf.bool, [3], name="flag")
    dflt = tf.placeholder_with_default(np.float32(2.5), [], name="dflt")
    fetches = [x * tf.cast(k, tf.float64), tf.reduce_sum(x, 1), tf.identity(s),
               tf.equal(flag, tf.constant([True, False, True])), dflt * 2.0, k + 1]
    feed = {x: _rng(15).standard_normal((2, 3)), k: np.int64(3), s: [b"hi", b"there"],
            flag: [True, True, False]}
    return fetches, feed, []


@example
def control_dependencies_and_group():
    v = tf.Variable(0, name="ticks")
    bump = tf.assign_add(v, 1)
    with tf.control_dependencies([bump]):
        after = tf.identity(v.read_value(), name="after")  # reads only after the bump
        plus = tf.add(tf.constant(100), 1)
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b")
    both = tf.group(a.assign_add(1.0), b.assign_sub(1.0), name="both")
    setup = [(tf.global_variables_initializer(), None), (both, None), (both, None),
             (after, None)]
    # `v` itself is not fetched: a read beside the bump has no defined order.
    return [after, plus, a, b, tf.no_op()], None, setup


@example
def control_edges_only_across_tasks():
    # Fetching `marker` alone must still run the updates it waits on.
    v = tf.Variable(np.zeros(2, np.float32), name="v")
    w = tf.Variable(5, name="w")
    with tf.control_dependencies([v.assign_add([1.0, 2.0]), tf.assign_sub(w, 1)]):
        marker = tf.constant(3) * 2
    trigger = tf.group(marker, tf.no_op())
    setup = [(tf.global_variables_initializer(), None), (marker, None), (trigger, None)]
    return [v, w], None, setup


@example
def mlp_784_256_10_forward_and_loss():
    tf.set_random_seed(7)
    x = tf.placeholder(tf.float32, [None, 784], name="x")
    y = tf.placeholder(tf.float32, [None, 10], name="y")
    w1 = tf.Variable(tf.truncated_normal([784, 256], stddev=0.05), name="w1")
    b1 = tf.Variable(tf.zeros([256]), name="b1")
    w2 = tf.Variable(tf.truncated_normal([256, 10], stddev=0.05), name="w2")
    b2 = tf.Variable(tf.fill([10], 0.1), name="b2")
    hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
    logits = tf.matmul(hidden, w2) + b2
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
    correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    rng = _rng(16)
    feed = {x: rng.uniform(0, 1, (32, 784)).astype(np.float32),
            y: np.eye(10, dtype=np.float32)[rng.integers(0, 10, 32)]}
    setup = [(tf.global_variables_initializer(), None)]
    return [logits, tf.nn.softmax(logits), loss, accuracy, w1], feed, setup


@example
def strings_constant_and_identity():
    words = tf.constant([["ab", ""], ["ünïcode", "x" * 300]])
    raw = tf.constant(np.array([b"\x00\xffbytes", b"z"], dtype=object))
    same = tf.identity(tf.identity(words))
    return [words, same, tf.transpose(same), tf.reshape(raw, [2, 1]),
            tf.concat([raw, raw], 0), tf.stack([raw, raw]), tf.equal(raw, "z"),
            tf.shape(words)], None, []


@example
def dtypes_int_float_bool():
    i32 = tf.constant(np.array([2 ** 30, -7, 3], np.int32))
    i64 = tf.constant(np.array([2 ** 40, -7, 3], np.int64))
    f16 = tf.constant(np.array([0.1, 65000.0, -2.5], np.float16))
    f64 = tf.constant(np.array([1e-300, np.pi, -1e300]))
    bools = tf.constant([True, False, True])
    fetches = [i32 + i32, i32 * 2, tf.reduce_sum(i32), i64 * i64, -i64, tf.abs(i64),
               f16 * f16, f16 + 1.0, tf.cast(f16, tf.float64),
               f64 * 2.0, f64 / 3.0, tf.cast(f64, tf.float32), tf.cast(i64, tf.float64),
               tf.cast(i32, tf.int64), tf.cast(bools, tf.int32), tf.cast(f64, tf.bool),
               tf.equal(bools, tf.constant([True, True, False])), tf.identity(bools),
               tf.stack([bools, bools]), i32 > 0, tf.not_equal(i64, 3)]
    return fetches, None, []


@example
def feeds_and_fetches_of_any_tensor():
    # A fed intermediate tensor cuts its producer out, wherever either runs.
    x = tf.placeholder(tf.float32, [3], name="x")
    doubled = x * 2.0
    shifted = doubled + 1.0
    scale = tf.constant(4.0) - 1.0
    fed = {x: np.array([1.0, 2.0, 3.0], np.float32), scale: 10.0}
    return [shifted, shifted, x, doubled, scale * shifted, tf.identity(x)], fed, \
        [([doubled, shifted], {doubled: np.array([5.0, 6.0, 7.0], np.float32)})]


@example
def empty_scalar_and_special_values():
    empty = tf.zeros([0, 3])
    special = tf.constant([np.nan, np.inf, -np.inf, -0.0, 1e-45], tf.float32)
    half = tf.constant(np.float16(6.1e-5))
    fetches = [empty, tf.concat([empty, tf.ones([2, 3])], 0), tf.reduce_sum(empty, 0),
               tf.reduce_max(empty, 1), tf.shape(empty), tf.constant(np.zeros(0, np.int64)),
               tf.constant([], tf.string), tf.constant(""), tf.constant(True),
               special, special * 1.0, tf.abs(special), half * 2.0,
               tf.matmul(empty, tf.ones([3, 2]), transpose_a=False),
               tf.log(tf.constant([0.0, -1.0]))]
    return fetches, None, []


# -- running an example ---------------------------------------------------------------
def _round_robin(chosen: dict):
    """A device function dealing ops to the three tasks in turn; records
    {op name: task} in `chosen`."""
    tasks = itertools.cycle(SPREAD_TASKS)

    def choose(op) -> str:
        chosen[op.name] = next(tasks)
        return chosen[op.name]
    return choose


def _by_name_hash(chosen: dict):
    """A device function picking each op's task from a hash of its name."""
    tasks = list(SPREAD_TASKS)

    def choose(op) -> str:
        chosen[op.name] = tasks[zlib.crc32(op.name.encode()) % len(tasks)]
        return chosen[op.name]
    return choose


def run_example(build: Callable, target: str, spread: Callable | None = None,
                scope: str = ""):
    """Builds and runs one example; returns (results, RunMetadata of every run).

    Spread (`spread` is `_round_robin` or `_by_name_hash`), it also checks
    every op ran on the task the device function chose. The graph is built in
    name scope `scope` (default: the example's name), which names its state.
    """
    graph, chosen = tf.Graph(), {}
    with graph.as_default(), tf.name_scope(scope or build.__name__):
        if spread:
            with tf.device(spread(chosen)):
                fetches, feed, setup = build()
        else:
            fetches, feed, setup = build()
    results, metas = [], []
    with tf.Session(target, graph=graph) as sess:
        for fetch, step_feed in list(setup) + [(fetches, feed)]:
            meta = tf.RunMetadata()
            results.append(sess.run(fetch, step_feed, options=FULL_TRACE, run_metadata=meta))
            metas.append(meta)
    ran_on = {n.node_name: d.device for m in metas for d in m.step_stats.dev_stats
              for n in d.node_stats}
    misplaced = {name: (task, ran_on[name]) for name, task in chosen.items()
                 if name in ran_on and ran_on[name] != SPREAD_TASKS[task]}
    assert not misplaced, f"ops not run where the device function put them: {misplaced}"
    return results, metas


def assert_same(got, want, where: str = "result") -> None:
    if isinstance(want, (list, tuple)):
        assert isinstance(got, type(want)) and len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{k}]")
    elif isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        for k in want:
            assert_same(got[k], want[k], f"{where}[{k!r}]")
    elif want is None:
        assert got is None, where
    else:
        g, w = np.asarray(got), np.asarray(want)
        assert (g.dtype, g.shape) == (w.dtype, w.shape), where
        if w.dtype.kind == "f":
            tol = TOL[w.dtype.type]
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=where)
        else:
            np.testing.assert_array_equal(g, w, err_msg=where)


def devices_used(metas) -> set:
    return {d.device for m in metas for d in m.step_stats.dev_stats if d.node_stats}


# -- fixtures --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def one_task():
    with Cluster.local(jobs={"worker": 1}) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def three_tasks():
    with Cluster.local(ps=1, worker=2) as cluster:
        yield cluster


# -- tests ------------------------------------------------------------------------------
@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_same_on_one_task_and_spread_across_three(name, one_task, three_tasks):
    build = EXAMPLES[name]
    in_process, _ = run_example(build, "")
    on_one, one_metas = run_example(build, one_task.target("worker", 0))
    spread, spread_metas = run_example(build, three_tasks.target("worker", 0), _round_robin)
    assert devices_used(one_metas) == {W0}
    assert_same(on_one, in_process, f"{name} on one task vs in process")
    assert_same(spread, in_process, f"{name} spread vs in process")
    assert devices_used(spread_metas) == {PS, W0, W1}, "the spread run left a task idle"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_same_spread_by_name_hash_from_another_master(name, three_tasks):
    # Another split of the same graph, a fresh session, worker 1 as master;
    # a scope of its own keeps the first test's variables and queues apart.
    build = EXAMPLES[name]
    in_process, _ = run_example(build, "")
    spread, metas = run_example(build, three_tasks.target("worker", 1), _by_name_hash,
                                scope=f"{name}_by_hash")
    assert_same(spread, in_process, f"{name} spread by name hash vs in process")
    assert devices_used(metas) == {PS, W0, W1}, "the spread run left a task idle"


def test_random_examples_draw_new_numbers_each_run(one_task):
    # Guards the comparison above: equal results must not come from a
    # generator that restarts at every run.
    (first, second), _ = run_example(EXAMPLES["random_with_graph_seed"],
                                     one_task.target("worker", 0))
    for a, b in zip(first, second):
        assert not np.array_equal(a, b)


def test_round_robin_really_spreads_the_ops():
    graph, chosen = tf.Graph(), {}
    with graph.as_default(), tf.device(_round_robin(chosen)):
        a = tf.constant(1.0)
        b = a + 1.0
        c = b * 2.0
    assert {op.device for op in graph.get_operations()} == set(SPREAD_TASKS)
    assert a.op.device != c.op.device and chosen[c.op.name] == c.op.device
