"""replica_device_setter: variables to ps tasks (round robin or greedy by bytes),
everything else to the worker, merged with devices ops ask for themselves."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster.training.device_setter import _RoundRobinStrategy

pytestmark = pytest.mark.timeout(60)


def _var(shape, name):
    return tf.Variable(np.zeros(shape, np.float32), name=name)


def test_round_robin_and_worker_device():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2,
                                                  worker_device="/job:worker/task:1")):
        a, b, c = _var([2], "a"), _var([2], "b"), _var([2], "c")
        y = a + b
    assert [v.device for v in (a, b, c)] == ["/job:ps/task:0", "/job:ps/task:1",
                                             "/job:ps/task:0"]
    # A variable's Assign and read live with it (colocated), its initial value does not.
    assert a.initializer.device == a.read_value().device == "/job:ps/task:0"
    assert a.initial_value.device == "/job:worker/task:1"
    assert y.device == "/job:worker/task:1"


def test_cluster_gives_the_ps_count():
    cluster = tf.train.ClusterSpec({"ps": ["h:1", "h:2", "h:3"], "worker": ["h:4"]})
    with tf.device(tf.train.replica_device_setter(cluster=cluster)):
        devices = [_var([1], f"v{i}").device for i in range(4)]
    assert devices == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2",
                       "/job:ps/task:0"]
    assert tf.train.replica_device_setter(cluster={"worker": ["h:4"]}) is None
    assert tf.train.replica_device_setter() is None  # no ps: placement left alone


def test_merges_with_requested_devices():
    setter = tf.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:0")
    with tf.device(setter):
        with tf.device("/device:GPU:0"):
            v = _var([2], "v")
            x = tf.constant(1.0)
        with tf.device("/job:ps/task:1"):
            pinned = _var([2], "pinned")  # the task asked for is kept
        with tf.device("/job:other"):
            other = _var([2], "other")  # another job: no ps task is chosen
    assert v.device == "/job:ps/task:0/device:GPU:0"
    assert x.device == "/job:worker/task:0/device:GPU:0"
    assert pinned.device == "/job:ps/task:1"
    assert other.device == "/job:other"


def test_merge_devices_false_leaves_requested_devices():
    setter = tf.train.replica_device_setter(ps_tasks=1, merge_devices=False)
    with tf.device(setter):
        with tf.device("/job:mine/task:3"):
            x = tf.constant(1.0)
        y = tf.constant(2.0)
    assert x.device == "/job:mine/task:3"
    assert y.device == "/job:worker"


def test_ps_ops_and_custom_strategy():
    chosen = []

    def strategy(op):
        chosen.append(op.name)
        return 1

    with tf.device(tf.train.replica_device_setter(ps_tasks=2, ps_ops=["Const"],
                                                  ps_strategy=strategy)):
        x = tf.constant(1.0, name="c")
        v = _var([1], "v")
    assert x.device == v.initial_value.device == "/job:ps/task:1"
    assert chosen == ["c", "v/initial_value"]
    assert v.device == "/job:worker"  # VariableV2 is not among these ps_ops
    with pytest.raises(TypeError, match="ps_strategy must be callable"):
        tf.train.replica_device_setter(ps_tasks=1, ps_strategy=3)


def test_greedy_by_bytes():
    strategy = tf.train.GreedyLoadBalancingStrategy(2, tf.train.byte_size_load_fn)
    with tf.device(tf.train.replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
        big = _var([1000], "big")       # 4000 bytes -> task 0
        small = [_var([10], f"s{i}") for i in range(5)]  # 40 bytes each -> task 1
        mid = _var([500], "mid")        # task 1 (200 < 4000)
        last = _var([4000], "last")     # task 1 (2200 < 4000)
        after = _var([1], "after")      # task 0 (4000 < 18200)
    assert big.device == "/job:ps/task:0"
    assert {v.device for v in small} == {"/job:ps/task:1"}
    assert mid.device == last.device == "/job:ps/task:1"
    assert after.device == "/job:ps/task:0"


def test_global_step_and_slots_land_on_ps():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2,
                                                  worker_device="/job:worker/task:0")):
        step = tf.train.get_or_create_global_step()
        w = _var([3], "w")
        opt = tf.train.MomentumOptimizer(0.1, 0.9)
        train_op = opt.apply_gradients([(np.ones(3, np.float32), w)], global_step=step)
    assert step.device == "/job:ps/task:0" and w.device == "/job:ps/task:1"
    assert opt.get_slot(w, "momentum").device == "/job:ps/task:1"
    assert train_op.device == "/job:ps/task:0"


def test_byte_size_load_fn_and_strategy_errors():
    v = _var([3, 4], "v")
    assert tf.train.byte_size_load_fn(v.op) == 48
    wide = tf.Variable(np.zeros(2, np.float64), name="wide")
    assert tf.train.byte_size_load_fn(wide.op) == 16
    unknown = tf.placeholder(tf.float32, [None, 3])
    with pytest.raises(ValueError, match="not fully defined"):
        tf.train.byte_size_load_fn(unknown.op)
    with pytest.raises(ValueError, match="num_tasks must be positive"):
        tf.train.GreedyLoadBalancingStrategy(0, tf.train.byte_size_load_fn)
    rr = _RoundRobinStrategy(3)
    assert [rr(None) for _ in range(5)] == [0, 1, 2, 0, 1]
