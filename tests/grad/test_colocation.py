"""Gradient ops run where their forward op ran: each is built colocated with it.

Checked twice: in process, with the forward ops pinned to two CPUs of one
task, and across task processes (ps + two workers over real gRPC), reading
where each op ran from the step stats of a FULL_TRACE run.
"""
import re

import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(180)

FULL_TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
SCOPE = re.compile(r"^gradients/(.+)_grad/[^/]+$")


def _where(metadata) -> dict:
    return {n.node_name: d.device for d in metadata.step_stats.dev_stats for n in d.node_stats}


def _two_layer_model(first: str, second: str, var_device: str = None):
    rng = np.random.default_rng(3)
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(var_device or first):
            w0 = tf.Variable(rng.normal(size=(4, 5)).astype(np.float32), name="w0")
        with tf.device(var_device or second):
            w1 = tf.Variable(rng.normal(size=(5, 3)).astype(np.float32), name="w1")
        with tf.device(first):
            x = tf.placeholder(tf.float32, [None, 4], name="x")
            h = tf.nn.relu(tf.matmul(x, w0, name="mm0"), name="h")
        with tf.device(second):
            logits = tf.matmul(h, w1, name="mm1")
            labels = tf.placeholder(tf.float32, [None, 3], name="labels")
            xent = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
            loss = tf.reduce_mean(xent, name="loss")
        grads = tf.gradients(loss, [w0, w1])
        init = tf.global_variables_initializer()
    feed = {x: rng.normal(size=(6, 4)).astype(np.float32),
            labels: np.eye(3, dtype=np.float32)[rng.integers(0, 3, 6)]}
    return graph, init, grads + [loss], feed  # loss too, so every forward op runs


def _gradient_ops(graph) -> list:
    return [op for op in graph.get_operations() if op.name.startswith("gradients/")]


def _check_colocated(graph, where: dict) -> int:
    """Every gradient op that ran is on its forward op's device; returns how many ran."""
    checked = 0
    for op in _gradient_ops(graph):
        groups = op._attrs.get("_class")
        assert groups and all(g.startswith("loc:@") for g in groups), op.name
        match = SCOPE.match(op.name)
        if match:  # built by the rule of the op it is named after, so colocated with it
            forward = graph.get_operation_by_name(match.group(1))
            assert groups == forward.colocation_groups(), (op.name, groups)
        if op.name not in where:
            continue
        forward = graph.get_operation_by_name(groups[0][5:])
        anchor = forward.colocation_groups()[0][5:]  # a read Identity sits with its variable
        assert where[op.name] == where[anchor], (op.name, where[op.name], anchor)
        checked += 1
    return checked


def test_gradient_ops_follow_forward_ops_across_two_devices():
    graph, init, grads, feed = _two_layer_model("/device:CPU:0", "/device:CPU:1")
    config = tf.ConfigProto(device_count={"CPU": 2})
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        meta = tf.RunMetadata()
        sess.run(grads, feed, options=FULL_TRACE, run_metadata=meta)
    where = _where(meta)
    assert where["mm0"].endswith("CPU:0") and where["mm1"].endswith("CPU:1")
    assert where["gradients/mm1_grad/MatMul"].endswith("CPU:1")
    assert where["gradients/mm0_grad/MatMul_1"].endswith("CPU:0")
    assert _check_colocated(graph, where) >= 10


def test_gradient_ops_follow_forward_ops_across_task_processes(local_cluster):
    graph, init, grads, feed = _two_layer_model("/job:worker/task:0", "/job:worker/task:1",
                                                var_device="/job:ps/task:0")
    with tf.Session(local_cluster.target("worker", 0), graph=graph) as sess:
        sess.run(init)
        meta = tf.RunMetadata()
        remote = sess.run(grads, feed, options=FULL_TRACE, run_metadata=meta)
    local_graph, local_init, local_grads, local_feed = _two_layer_model("", "")  # unpinned
    with tf.Session(graph=local_graph) as sess:
        sess.run(local_init)
        local = sess.run(local_grads, local_feed)
    for r, l in zip(remote, local):
        np.testing.assert_allclose(r, l, rtol=1e-5, atol=1e-6)
    where = _where(meta)
    assert "/job:worker/replica:0/task:1/" in where["gradients/mm1_grad/MatMul"]
    assert "/job:worker/replica:0/task:0/" in where["gradients/h_grad/ReluGrad"]
    assert _check_colocated(graph, where) >= 10
    tasks = {d.split("/device:")[0] for name, d in where.items() if name.startswith("grad")}
    assert tasks == {"/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"}
