"""ParameterServerStrategy without a cluster: placement, validation, run/reduce."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster.distribute.cluster_resolver import SimpleClusterResolver
from nbcluster.distribute.experimental import ParameterServerStrategy

pytestmark = pytest.mark.timeout(30)

SPEC = {"ps": ["127.0.0.1:1", "127.0.0.1:2"], "worker": ["127.0.0.1:3", "127.0.0.1:4"],
        "chief": ["127.0.0.1:5"]}


def make(spec=None, rpc_layer="grpc", **kwargs):
    return ParameterServerStrategy(SimpleClusterResolver(spec or SPEC, rpc_layer=rpc_layer),
                                   **kwargs)


def test_variables_go_to_ps_tasks_round_robin(fresh_graph):
    strategy = make()
    with strategy.scope():
        vs = [tf.Variable(np.zeros(2, np.float32), name=f"v{i}") for i in range(5)]
        y = vs[0] * 2.0
    assert [v.device for v in vs] == [f"/job:ps/replica:0/task:{i % 2}/device:CPU:0"
                                      for i in range(5)]
    assert all(v.initializer.device == v.device for v in vs)  # colocated
    assert y.device == ""  # compute is left to whichever worker runs it
    assert all(strategy.extended.variable_created_in_scope(v) for v in vs)
    assert strategy.extended.parameter_devices == (
        "/job:ps/replica:0/task:0/device:CPU:0", "/job:ps/replica:0/task:1/device:CPU:0")
    assert strategy.num_replicas_in_sync == 1
    assert strategy.graph is fresh_graph


def test_variables_made_in_scope_are_resource_variables_as_tf2s(fresh_graph):
    strategy = make()
    with strategy.scope():
        v = tf.Variable(np.zeros(2, np.float32), name="v")
        step = tf.train.get_or_create_global_step()
    outside = tf.Variable(1.0)
    assert v.op.type == "VarHandleOp" and step.op.type == "VarHandleOp"
    assert v.initializer.type == "AssignVariableOp" and v.initializer.device == v.device
    assert outside.op.type == "VariableV2"  # only the scope makes them by default


def test_a_pinned_variable_stays_where_it_was_put():
    strategy = make()
    with strategy.scope():
        with tf.device("/job:worker/task:1"):
            local = tf.Variable(1.0)
        remote = tf.Variable(1.0)
    assert local.device.startswith("/job:worker/task:1")
    assert remote.device.startswith("/job:ps/replica:0/task:0")


def test_variables_outside_scope_are_not_placed():
    make()
    assert tf.Variable(1.0).device == ""


def test_run_calls_the_function_once_and_reduce_combines(fresh_graph):
    strategy = make()
    calls = []
    out = strategy.run(lambda a, b=1: calls.append((a, b)) or a + b, args=(2,), kwargs={"b": 3})
    assert out == 5 and calls == [(2, 3)]
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    total = strategy.reduce(tf.distribute.ReduceOp.SUM, x, axis=0)
    mean = strategy.reduce("MEAN", x, axis=None)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(total), [4.0, 6.0])
        np.testing.assert_allclose(sess.run(mean), [[1, 2], [3, 4]])


def test_bad_clusters_and_options_are_rejected():
    with pytest.raises(ValueError, match="missing \\['ps'\\]"):
        make({"worker": ["127.0.0.1:3"]})
    with pytest.raises(ValueError, match="'grpc\\+verbs'"):
        make(rpc_layer="grpc+verbs")
    with pytest.raises(TypeError, match="variable_partitioner must be callable"):
        make(variable_partitioner=3)
    with pytest.raises(TypeError, match="cluster_spec"):
        ParameterServerStrategy(SPEC)


def test_the_coordinator_needs_this_strategy():
    with pytest.raises(ValueError, match="ParameterServerStrategy"):
        tf.distribute.experimental.coordinator.ClusterCoordinator(object())
