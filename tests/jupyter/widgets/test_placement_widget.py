"""The PlacementView widget: arguments, synced state, scope clicks, text/html and text/plain."""
from __future__ import annotations

import json

import numpy as np
import pytest
import traitlets
from test_placement_model import pinned_graph
from test_placement_scopes import deep_training_graph

import nbcluster as tf
from nbcluster.jupyter.widgets.placement import PlacementView

pytestmark = pytest.mark.timeout(60)

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
LOCAL = "/job:localhost/replica:0/task:0/device:CPU:0"


def test_needs_a_graph_or_run_metadata_of_the_right_type():
    graph, _ = pinned_graph()
    with pytest.raises(TypeError, match="got neither"):
        PlacementView()
    with pytest.raises(TypeError, match="tf.Graph, got str"):
        PlacementView(graph="graph")
    with pytest.raises(TypeError, match="tf.RunMetadata, got Graph"):
        PlacementView(run_metadata=graph)
    with pytest.raises(TypeError, match="got float"):
        PlacementView(graph=graph, fetches=1.5)
    with pytest.raises(ValueError, match="'missing'"):
        PlacementView(graph=graph, fetches="missing")
    with pytest.raises(ValueError, match="'sideways'"):
        PlacementView(graph=graph, rankdir="sideways")
    with pytest.raises(ValueError, match="threshold"):
        PlacementView(graph=graph, threshold=0)
    with pytest.raises(ValueError, match="color_by must be one of .* got 'speed'"):
        PlacementView(graph=graph, color_by="speed")


def test_a_lower_budget_from_the_browser_folds_more_and_is_echoed():
    view = PlacementView(graph=deep_training_graph(layers=12))
    wide = view.view
    assert wide["summary"]["budget"] == view.budget == 40
    view.set_state({"budget": 4})                        # what the front end sends
    narrow = view.view
    assert narrow["summary"]["budget"] == 4
    assert len(narrow["nodes"]) < len(wide["nodes"])
    view.set_state({"budget": 3})                        # nothing more folds, still answered
    assert view.view["summary"]["budget"] == 3 and view.view["nodes"] == narrow["nodes"]
    with pytest.raises(traitlets.TraitError, match="budget must be at least 1, got 0"):
        view.budget = 0
    assert view.budget == 3
    view.set_state({"color_by": "time"})                 # the menu in the browser
    assert view.color_by == "time"
    with pytest.raises(traitlets.TraitError, match="color_by must be one of"):
        view.color_by = "speed"


def test_properties_and_synced_view():
    graph, t = pinned_graph()
    view = PlacementView(graph=graph, fetches=[t["total"]])
    assert view.devices == ["/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1"]
    assert {n["name"] for n in view.nodes} == {"w", "w/read", "x", "y", "mul/y", "mul",
                                               "total/Const", "total"}
    assert sorted(view.transfers) == [
        ("w/read", "y", "/job:ps/task:0", "/job:worker/task:0", 24),
        ("y", "mul", "/job:worker/task:0", "/job:worker/task:1", None)]
    state = view.get_state()
    json.dumps(state)                                   # what the comm sends
    assert {n["name"] for n in state["view"]["nodes"]} == {n["name"] for n in view.nodes}
    assert state["rankdir"] == "TB" and state["expanded"] == []
    assert "nbc-edge-transfer" in state["_esm"] and "nbcluster-placement" in state["_esm"]


def test_a_click_from_the_browser_expands_and_folds_a_scope():
    view = PlacementView(graph=deep_training_graph(layers=12))
    folded = view.view
    grads = next(n for n in folded["nodes"] if n["scope"] == "gradients")
    view.set_state({"expanded": [grads["scope"]]})      # the front end's update message
    opened = view.view
    assert any(g["scope"] == "gradients" for g in opened["groups"])
    assert len(opened["nodes"]) > len(folded["nodes"])
    view.toggle("gradients/")
    assert view.expanded == [] and view.view == folded
    view.toggle("gradients")
    assert view.expanded == ["gradients"] and view.view == opened


def test_fallbacks_for_renderers_without_widgets():
    graph, _ = pinned_graph()
    view = PlacementView(graph=graph)
    data, _ = view._repr_mimebundle_()
    assert WIDGET_MIME in data and data[WIDGET_MIME]["model_id"] == view.model_id
    assert data["text/plain"] == (
        "PlacementView (requested): 15 ops on 3 devices (unplaced: 1, /job:ps/task:0: 4, "
        "/job:worker/task:0: 4, /job:worker/task:1: 6); 3 cross-device transfers (56 B)")
    page = data["text/html"]
    assert page.count("<tr>") == 1 + 4 + 1 + 3          # heads, devices, transfers
    assert "<code>/job:worker/task:1</code></td><td>6</td>" in page
    assert "<code>w/read:0</code>" in page and "32 B" in page


def test_run_metadata_of_a_local_session():
    graph = tf.Graph()
    with graph.as_default():
        with tf.name_scope("a"):
            w = tf.Variable(np.ones((3, 2), np.float32), name="w")
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.matmul(x, w, name="y")
        init = tf.global_variables_initializer()
    meta = tf.RunMetadata()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        sess.run(y, {x: np.ones((5, 3), np.float32)}, run_metadata=meta,
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE,
                                       output_partition_graphs=True))
    view = PlacementView(run_metadata=meta, graph=graph)
    assert view.devices == [LOCAL]
    ops = {n["name"]: n for n in view.nodes}
    assert ops["y"]["device"] == LOCAL and ops["y"]["shape"] == "[5, 2]"
    assert ops["y"]["time_us"] is not None and ops["y"]["start_us"] >= 0
    assert ops["x"]["op"] == "Placeholder" and ops["x"]["device"] == "/job:client"
    assert sorted(view.transfers) == [("x", "y", "/job:client", LOCAL, 60),
                                      ("y", "fetch:y:0", LOCAL, "/job:client", 40)]
    json.dumps(view.get_state())
