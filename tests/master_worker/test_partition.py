"""Partitioning twice (by task on the master, by device on each worker) keeps every edge."""
from __future__ import annotations

import nbcluster as tf
from nbcluster.framework.node import Node, parse_input
from nbcluster.master_worker.partition import partition
from nbcluster.master_worker.rendezvous import task_of

A0 = "/job:a/replica:0/task:0/device:CPU:0"
A1 = "/job:a/replica:0/task:0/device:CPU:1"
B0 = "/job:b/replica:0/task:0/device:CPU:0"
B1 = "/job:b/replica:0/task:0/device:CPU:1"
F32 = {"_output_types": [tf.float32]}


def _split_twice(nodes: list) -> dict:
    """device -> nodes, as the master and then each worker split them."""
    pieces = {}
    for task_nodes in partition(nodes, key=task_of, incarnation=lambda d: 1).values():
        pieces.update(partition(task_nodes, key=lambda d: d, incarnation=lambda d: 1))
    return pieces


def test_worker_split_names_nothing_the_master_split_already_named():
    # x crosses to both devices of task b (the master's _send_x_0_1 and _2 on A0)
    # and to A1 (the worker's first crossing: it used to be _send_x_0_1 again).
    nodes = [Node("x", "Const", (), A0, F32),
             Node("y", "Identity", ("x",), A1, F32),
             Node("z", "Identity", ("x",), B0, F32),
             Node("w", "AddV2", ("x", "z"), B1, F32),
             Node("v", "Identity", ("y",), A0, F32)]
    pieces = _split_twice(nodes)
    for device, piece in pieces.items():
        names = [n.name for n in piece]
        assert len(names) == len(set(names)), f"{device}: {sorted(names)}"
    sends = {(n.attrs["tensor_name"], n.attrs["recv_device"])
             for piece in pieces.values() for n in piece if n.op == "_Send"}
    recvs = {(n.attrs["tensor_name"], n.attrs["recv_device"])
             for piece in pieces.values() for n in piece if n.op == "_Recv"}
    assert sends == recvs == {("x:0", A1), ("x:0", B0), ("x:0", B1), ("z:0", B1),
                              ("y:0", A0)}


def test_split_names_avoid_every_name_given():
    # A node already named like the pair the split would make (a feed's _Recv,
    # a user's node) keeps its name; the new pair gets another.
    nodes = [Node("x", "Const", (), A0, F32),
             Node("_send_x_0_1", "Identity", ("x",), A0, F32),
             Node("_recv_x_0_2", "Identity", ("x",), A0, F32),
             Node("y", "Identity", ("x",), A1, F32)]
    pieces = partition(nodes, key=lambda d: d, incarnation=lambda d: 1)
    names = [n.name for piece in pieces.values() for n in piece]
    assert len(names) == len(set(names))
    (recv,) = [n for n in pieces[A1] if n.op == "_Recv"]
    (y,) = [n for n in pieces[A1] if n.name == "y"]
    assert parse_input(y.inputs[0])[0] == recv.name

