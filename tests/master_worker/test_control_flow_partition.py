"""Partitioning graphs with control flow: control-flow pairs, skeleton loops
where a frame spans partitions, and plain graphs left as they were."""
from __future__ import annotations

import nbcluster as tf
from nbcluster.master_worker.partition import partition
from nbcluster.master_worker.rendezvous import task_of

W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"


def _placed(graph) -> list:
    nodes = []
    for op in graph.get_operations():
        node = op.to_node()
        nodes.append(node.with_changes(device=W1 if "task:1" in node.device else W0))
    return nodes


def _parts(graph) -> dict:
    return partition(_placed(graph), key=task_of, incarnation=lambda d: 1)


def test_plain_graphs_get_plain_pairs_and_no_skeleton():
    with tf.Graph().as_default() as g:
        x = tf.constant(1.0)
        with tf.device("/job:worker/task:1"):
            tf.identity(x * 2.0)
    parts = _parts(g)
    pairs = [n for nodes in parts.values() for n in nodes if n.op in ("_Send", "_Recv")]
    assert pairs and not any(n.attrs.get("_cf") for n in pairs)
    assert not any(n.inputs for n in pairs if n.op == "_Recv")
    assert sum(len(nodes) for nodes in parts.values()) == len(g.get_operations()) + 2


def test_a_loop_body_on_another_task_gets_a_skeleton_loop_there():
    with tf.Graph().as_default() as g:
        def body(i, a):
            with tf.device("/job:worker/task:1"):
                a = a * 2.0
            return i + 1, a
        tf.while_loop(lambda i, a: i < 3, body, [0, 1.0])
    parts = _parts(g)
    remote = {n.name: n for n in parts[("worker", 1)]}
    ops = sorted(n.op for n in remote.values())
    for op in ("Enter", "Merge", "Switch", "NextIteration"):
        assert op in ops, ops
    recvs = [n for n in remote.values() if n.op == "_Recv"]
    assert recvs and all(n.attrs["_cf"] for n in recvs)
    # Each Recv waits for the skeleton: the predicate's for its Merge, the rest for the pivot.
    pred = next(n for n in recvs if n.attrs["tensor_name"].endswith("LoopCond:0"))
    assert remote[pred.inputs[0][1:]].op == "Merge"
    for n in recvs:
        if n is not pred:
            assert remote[n.inputs[0][1:]].op == "Identity"
    home_recvs = [n for n in parts[("worker", 0)] if n.op == "_Recv"]
    assert home_recvs and all(n.inputs and n.inputs[0].startswith("^") for n in home_recvs)
