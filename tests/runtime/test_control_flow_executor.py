"""The frame executor on its own: dead tensors, Merge, frames and iterations,
and that partitions without control flow keep the plain executor."""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.framework.node import Node
from nbcluster.runtime.control_flow_executor import FrameExecutor, make_executor
from nbcluster.runtime.devices import local_devices
from nbcluster.runtime.executor import Executor
from nbcluster.runtime.kernel_table import _KERNELS
from nbcluster.runtime.resources import ResourceMgr
from nbcluster.runtime.step import StepContext

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True, scope="module")
def kernels():
    from nbcluster.kernels import load_all
    from nbcluster.master_worker import send_recv  # noqa: F401 - the fetches' _Send
    load_all()


def _device():
    return local_devices("localhost", 0)[0]


def _nodes(graph, fetches: list) -> list:
    device = _device()
    nodes = [op.to_node().with_changes(device=device.name) for op in graph.get_operations()]
    for k, t in enumerate(fetches):
        nodes.append(Node(f"_fetch_{k}", "_Send", (t._ref(),), device.name,
                          {"tensor_name": t.name, "client_terminated": True, "T": t.dtype}))
    return nodes


def _run(graph, fetches: list) -> list:
    ctx = StepContext(1, ResourceMgr(), "localhost")
    make_executor(_nodes(graph, fetches), _device()).run(ctx)
    return [ctx.fetches[t.name] for t in fetches]


def test_plain_partitions_keep_the_plain_executor():
    with tf.Graph().as_default() as g:
        y = tf.constant(1.0) + 2.0
    assert type(make_executor(_nodes(g, [y]), _device())) is Executor
    with tf.Graph().as_default() as g:
        y = tf.cond(tf.constant(True), lambda: tf.constant(1.0), lambda: tf.constant(2.0))
    assert type(make_executor(_nodes(g, [y]), _device())) is FrameExecutor


def test_merge_forwards_the_live_input_and_its_index():
    from nbcluster.ops.control_flow import merge, switch
    for taken in (False, True):
        with tf.Graph().as_default() as g:
            data = tf.constant(np.array([1.0, 2.0], np.float32))
            f, t = switch(data, tf.constant(taken))
            out, index = merge([f * 10.0, t * 100.0])
        got, got_index = _run(g, [out, index])
        np.testing.assert_allclose(got, [100.0, 200.0] if taken else [10.0, 20.0])
        assert got_index == (1 if taken else 0)


def test_a_dead_input_runs_no_kernel_and_dead_reaches_every_consumer():
    from nbcluster.ops.control_flow import merge, switch
    calls = []
    factory = _KERNELS[("Neg", "CPU")]

    def counting(node, device):
        compute = factory(node, device)

        def run(ctx, x):
            calls.append(node.name)
            return compute(ctx, x)
        return run
    with tf.Graph().as_default() as g:
        f, t = switch(tf.constant(3.0), tf.constant(False))
        chain = tf.negative(tf.negative(t, name="neg_a"), name="neg_b")  # dead all along
        out, index = merge([chain, tf.negative(f, name="neg_live")])
    _KERNELS[("Neg", "CPU")] = counting
    try:
        assert _run(g, [out, index]) == [-3.0, 1]
    finally:
        _KERNELS[("Neg", "CPU")] = factory
    assert calls == ["neg_live"]


def test_a_merge_of_dead_inputs_is_dead_so_its_fetch_fails():
    from nbcluster.ops.control_flow import merge, switch
    with tf.Graph().as_default() as g:
        f, _ = switch(tf.constant(1.0), tf.constant(True))
        out, _ = merge([f, f * 2.0])
    with pytest.raises(errors.InvalidArgumentError, match="dead"):
        _run(g, [out])


def test_a_control_trigger_is_live_even_when_its_inputs_are_dead():
    # TF's gradients of a cond inside a while loop sync their stacks with a
    # ControlTrigger on the untaken branch; its dead input once ended the loop
    from nbcluster.ops.control_flow import switch
    with tf.Graph().as_default() as g:
        _, t = switch(tf.constant(3.0), tf.constant(False))
        dead = tf.negative(t)
        with g.control_dependencies([dead]):
            trigger = g.create_op("ControlTrigger", [], {}, name="trigger")
        with g.control_dependencies([trigger]):
            after = tf.constant(7.0) * 2.0
    assert _run(g, [after]) == [14.0]


def test_a_hand_built_loop_of_nodes_runs_its_iterations():
    """Enter/Merge/Switch/LoopCond/NextIteration/Exit as a GraphDef spells them."""
    device = _device().name

    def node(name, op, inputs=(), **attrs):
        return Node(name, op, tuple(inputs), device, attrs)
    i32 = tf.int32
    value = {"dtype": i32}
    nodes = [
        node("zero", "Const", value=np.array(0, np.int32), **value),
        node("limit", "Const", value=np.array(7, np.int32), **value),
        node("enter", "Enter", ["zero"], T=i32, frame_name="f", is_constant=False,
             parallel_iterations=2),
        node("enter_limit", "Enter", ["limit"], T=i32, frame_name="f", is_constant=True,
             parallel_iterations=2),
        node("merge", "Merge", ["enter", "next"], T=i32, N=2),
        node("less", "Less", ["merge", "enter_limit"], T=i32),
        node("cond", "LoopCond", ["less"]),
        node("switch", "Switch", ["merge", "cond"], T=i32),
        node("body_in", "Identity", ["switch:1"], T=i32),
        node("three", "Const", ["^body_in"], value=np.array(3, np.int32), **value),
        node("add", "AddV2", ["body_in", "three"], T=i32),
        node("next", "NextIteration", ["add"], T=i32),
        node("exit", "Exit", ["switch"], T=i32),
        node("fetch", "_Send", ["exit"], tensor_name="exit:0", client_terminated=True, T=i32),
    ]
    ctx = StepContext(1, ResourceMgr(), "localhost")
    FrameExecutor(nodes, _device()).run(ctx)
    assert ctx.fetches["exit:0"] == 9


def test_an_input_from_an_unknown_node_is_an_invalid_argument():
    with pytest.raises(errors.InvalidArgumentError, match="unknown node 'nowhere'"):
        FrameExecutor([Node("m", "Merge", ("nowhere", "nowhere"), _device().name,
                            {"T": tf.float32, "N": 2})], _device())
