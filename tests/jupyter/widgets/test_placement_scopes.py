"""Folding name scopes so a 2,000-op training graph stays readable; merging the edges between."""
from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.jupyter.widgets.placement_model import from_graph
from nbcluster.jupyter.widgets.placement_scopes import view_data

pytestmark = pytest.mark.timeout(120)

WORKER = "/job:worker/task:0"


def deep_training_graph(layers: int = 68, width: int = 8):
    """A `layers`-deep relu MLP (one name scope per layer) trained by gradient
    descent, variables on one ps: about 2,000 ops."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=1, worker_device=WORKER)):
            h = tf.placeholder(tf.float32, [None, width], name="x")
            for i in range(layers):
                with tf.name_scope(f"layer_{i}"):
                    w = tf.Variable(tf.truncated_normal([width, width], stddev=0.1), name="w")
                    b = tf.Variable(tf.zeros([width]), name="b")
                    h = tf.nn.relu(tf.matmul(h, w) + b)
            loss = tf.reduce_mean(tf.square(h), name="loss")
            tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    return graph


@pytest.fixture(scope="module")
def big():
    return from_graph(deep_training_graph())


def members(node, placement) -> list:
    """The ops a drawn node stands for."""
    if node["kind"] == "op":
        return [node["name"]]
    scope = node["scope"]
    if scope.endswith("*"):  # a series: "layer_*" holds layer_0/…, layer_1/…
        series = re.compile(re.escape(scope[:-1]) + r"\d+(/|$)")
        return [o.name for o in placement.ops.values() if o.device == node["device"]
                and series.match(o.name)]
    return [o.name for o in placement.ops.values() if o.device == node["device"]
            and (o.name == scope or o.name.startswith(scope + "/"))]


def check_partition(view, placement) -> dict:
    """Every op is drawn exactly once (itself or inside one folded scope); returns op -> node id."""
    rep = {}
    for node in view["nodes"]:
        names = members(node, placement)
        assert node["count"] == len(names)
        for name in names:
            assert name not in rep, f"{name} drawn twice"
            rep[name] = node["id"]
    assert set(rep) == set(placement.ops)
    return rep


def test_a_2000_op_training_graph_folds_to_a_few_nodes(big):
    assert len(big.ops) >= 1900
    view = view_data(big)
    assert view["summary"]["visible"] == len(view["nodes"]) <= 20
    assert view["summary"]["ops"] == len(big.ops)
    check_partition(view, big)
    scopes = {(n["device"], n["scope"]): n for n in view["nodes"] if n["kind"] == "scope"}
    grads = scopes[(WORKER, "gradients")]
    assert grads["label"] == f"gradients/ ({grads['count']} ops)" and grads["count"] > 500
    # the 68 numbered layer scopes are one node per device, until that series is opened
    layers = scopes[(WORKER, "layer_*")]
    assert layers["label"] == f"layer_0…67 ({layers['count']} ops)"
    assert ("/job:ps/task:0", "layer_*") in scopes
    opened = view_data(big, expanded=["layer_*"])
    check_partition(opened, big)
    scopes = {(n["device"], n["scope"]) for n in opened["nodes"] if n["kind"] == "scope"}
    assert (WORKER, "layer_7") in scopes and ("/job:ps/task:0", "layer_7") in scopes
    assert (WORKER, "layer_*") not in scopes
    assert len(view["names"]) == len(big.ops) and "layer_7/w" in view["names"]


def test_merged_edges_count_the_op_edges_between_drawn_nodes(big):
    view = view_data(big)
    rep = check_partition(view, big)
    covered = {(t.src_node, c) for t in big.transfers for c in t.dst_nodes}
    expected = Counter()
    for t in big.transfers:
        for consumer in t.dst_nodes:
            if rep[t.src_node] != rep[consumer]:
                expected[(rep[t.src_node], rep[consumer], "transfer")] += 1
    for op in big.ops.values():
        for kind, sources in (("data", op.inputs), ("control", op.control_inputs)):
            for src in sources:
                if (src, op.name) not in covered and rep[src] != rep[op.name]:
                    expected[(rep[src], rep[op.name], kind)] += 1
    got = {(e["source"], e["target"], e["kind"]): e["count"] for e in view["edges"]}
    assert got == dict(expected)
    merged = [e for e in view["edges"] if e["count"] > 1]
    assert merged and all(e["label"].endswith(f"×{e['count']}") for e in merged)
    # a tensor counts once per drawn edge it travels on, however many consumers it has there
    transfer_bytes = sum(e["bytes"] or 0 for e in view["edges"] if e["kind"] == "transfer")
    assert transfer_bytes == sum(
        (t.bytes or 0) * len({rep[c] for c in t.dst_nodes} - {rep[t.src_node]})
        for t in big.transfers)


def test_expanding_a_scope_shows_its_children_in_a_box(big):
    folded = view_data(big)
    view = view_data(big, expanded=["gradients", "gradients/layer_*"])
    check_partition(view, big)
    box = next(g for g in view["groups"] if g["kind"] == "scope")
    assert box["scope"] == "gradients" and box["parent"] == f"task:{WORKER}"
    inside = [n for n in view["nodes"] if n["parent"] == box["id"]]
    assert len(inside) > 1 and all(n["name"].startswith("gradients/") for n in inside)
    assert not any(n["kind"] == "scope" and n["scope"] == "gradients" for n in view["nodes"])
    child = next(n for n in inside if n["scope"] == "gradients/layer_3")
    assert child["label"].startswith("layer_3/ (")                # relative to its box
    assert len(view["nodes"]) > len(folded["nodes"])

    deeper = view_data(big, expanded=["gradients", "gradients/layer_*", "gradients/layer_3"])
    check_partition(deeper, big)
    inner = next(g for g in deeper["groups"] if g["scope"] == "gradients/layer_3")
    assert inner["parent"] == box["id"]
    ops = [n for n in deeper["nodes"] if n["parent"] == inner["id"]]
    assert ops and all(n["name"].startswith("gradients/layer_3/") for n in ops)
    assert view_data(big, expanded=[]) == folded                    # folding again


def test_small_scopes_stay_open_unless_over_the_threshold():
    graph = tf.Graph()
    with graph.as_default():
        with tf.name_scope("dense"):
            w = tf.Variable(np.ones((3, 2), np.float32), name="w")
            y = tf.matmul(tf.placeholder(tf.float32, [None, 3], name="x"), w, name="y")
        tf.identity(y, name="out")
    placement = from_graph(graph)
    open_view = view_data(placement)                 # "dense" has 6 ops: a handful
    assert {n["kind"] for n in open_view["nodes"]} == {"op"}
    assert len(open_view["nodes"]) == len(placement.ops)
    folded = view_data(placement, threshold=3)
    labels = sorted(n["label"] for n in folded["nodes"])
    assert labels == ["dense/ (6 ops)", "out"]
    edge, = folded["edges"]
    assert (edge["source"], edge["target"], edge["count"]) == ("|dense/", "op:out", 1)


def test_numbered_scopes_fold_into_a_series_only_when_the_level_is_crowded():
    graph = tf.Graph()
    with graph.as_default(), tf.device(WORKER):
        h = tf.placeholder(tf.float32, [None, 2], name="x")
        for i in range(3):
            with tf.name_scope(f"block{i}"):
                h = tf.nn.relu(h + 1.0)
    placement = from_graph(graph)
    roomy = view_data(placement, threshold=6, budget=40)
    assert {n["scope"] for n in roomy["nodes"] if n["kind"] == "scope"} == set()  # drawn op by op
    crowded = view_data(placement, threshold=6, budget=2)
    check_partition(crowded, placement)
    series = [n for n in crowded["nodes"] if n["scope"] == "block*"]
    assert len(series) == 1 and series[0]["label"] == f"block0…2 ({series[0]['count']} ops)"
    opened = view_data(placement, expanded=["block*"], threshold=6, budget=2)
    check_partition(opened, placement)
    assert {n["scope"] for n in opened["nodes"] if n["kind"] == "scope"} == {
        "block0", "block1", "block2"}


def test_an_open_scope_folds_its_own_numbered_children_into_a_series(big):
    view = view_data(big, expanded=["gradients"])
    check_partition(view, big)
    assert any(n["scope"] == "gradients/layer_*" and n["label"].startswith("layer_0…67 (")
               for n in view["nodes"])
