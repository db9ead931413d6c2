"""PlacementView of a real traced step: a ps and two workers, each task a process on 127.0.0.1."""
from __future__ import annotations

import json

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.jupyter.widgets.placement import PlacementView

from cluster_graphs import three_task_graph

pytestmark = pytest.mark.timeout(120)

PS = "/job:ps/replica:0/task:0/device:CPU:0"
W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"
CLIENT = "/job:client"


def test_actual_placement_and_transfers_of_a_distributed_step(cluster_factory):
    cluster = cluster_factory({"ps": 1, "worker": 2})
    g = three_task_graph(np.arange(600, dtype=np.float32).reshape(30, 20) / 600)
    graph, w, x, y, total, init = g.graph, g.w, g.x, g.y, g.total, g.init
    feed = np.ones((5, 30), np.float32)
    meta = tf.RunMetadata()
    with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
        sess.run(init)
        w_val = sess.run(w)
        y_val, total_val = sess.run(
            [y, total], {x: feed}, run_metadata=meta,
            options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE,
                                  output_partition_graphs=True))

    view = PlacementView(run_metadata=meta, graph=graph)
    assert view.devices == [PS, W0, W1]
    device = {n["name"]: n["device"] for n in view.nodes}
    assert device["w"] == device["w/read"] == PS
    assert device["y"] == W0 and device["total"] == device["mul"] == W1
    assert device["x"] == CLIENT
    assert not any(name.startswith(("_send", "_recv")) for name in device)
    assert sorted(view.transfers) == sorted([
        ("w/read", "y", PS, W0, w_val.nbytes),
        ("x", "y", CLIENT, W0, feed.nbytes),
        ("y", "mul", W0, W1, y_val.nbytes),
        ("y", "fetch:y:0", W0, CLIENT, y_val.nbytes),
        ("total", "fetch:total:0", W1, CLIENT, np.asarray(total_val).nbytes)])
    y_node = next(n for n in view.nodes if n["name"] == "y")
    assert (y_node["dtype"], y_node["shape"], y_node["requested"]) == \
        ("float32", "[5, 20]", "/job:worker/task:0")
    assert y_node["time_us"] is not None and y_node["start_us"] >= 0

    state = view.get_state()
    json.dumps(state)
    edges = {(e["source"], e["target"]): e for e in state["view"]["edges"]}
    read = edges[("op:w/read", "op:y")]
    assert read["kind"] == "transfer" and read["label"] == "2.34 KiB"  # 600 float32
    parents = {n["name"]: n["parent"] for n in state["view"]["nodes"]}
    assert parents["y"] == f"dev:{W0}" and parents["x"] == "job:/job:client"
    groups = {g["id"]: g["parent"] for g in state["view"]["groups"]}
    assert groups[f"dev:{W0}"] == "task:/job:worker/task:0"
    assert groups["task:/job:worker/task:0"] == "job:/job:worker"
    assert view.summary().startswith("PlacementView (actual): 7 ops on 3 devices")
