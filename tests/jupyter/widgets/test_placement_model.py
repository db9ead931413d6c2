"""PlacementView's data: requested placement from a Graph, actual placement from RunMetadata."""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.jupyter.widgets.devices import UNPLACED, color_of
from nbcluster.jupyter.widgets.placement_metadata import from_run_metadata
from nbcluster.jupyter.widgets.placement_model import CLIENT, fetch_names, from_graph, prune
from nbcluster.jupyter.widgets.placement_scopes import device_chain, view_data

pytestmark = pytest.mark.timeout(60)

PS = "/job:ps/replica:0/task:0/device:CPU:0"
W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"


def pinned_graph():
    """w on the ps, y = x @ w on worker 0, total = sum(2y) on worker 1, one op unplaced."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.ones((3, 2), np.float32), name="w")
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [None, 3], name="x")
            x4 = tf.placeholder(tf.float32, [4, 3], name="x4")
            y = tf.matmul(x, w, name="y")
            y4 = tf.matmul(x4, w, name="y4")
        with tf.device("/job:worker/task:1"):
            total = tf.reduce_sum(y * 2.0, name="total")
            total4 = tf.reduce_sum(y4, name="total4")
        tf.constant(1.0, name="side")
    return graph, {"w": w, "x": x, "y": y, "total": total, "total4": total4}


def test_requested_placement_from_a_graph():
    graph, _ = pinned_graph()
    placement = from_graph(graph)
    assert placement.devices == ["/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1"]
    ops = placement.ops
    assert ops["w"].device == "/job:ps/task:0" and ops["w/read"].device == "/job:ps/task:0"
    assert ops["y"].device == "/job:worker/task:0" and ops["total"].device == "/job:worker/task:1"
    assert ops["side"].device == ""
    assert (ops["y"].op, ops["y"].dtype, ops["y"].shape) == ("MatMul", "float32", "[?, 2]")
    assert ops["y4"].shape == "[4, 2]" and ops["total"].shape == "[]"
    assert ops["y"].inputs == ("x", "w/read")
    assert not placement.actual


def test_graph_transfers_are_the_edges_between_devices_sized_by_static_shape():
    graph, _ = pinned_graph()
    by_tensor = {t.tensor: t for t in from_graph(graph).transfers}
    assert set(by_tensor) == {"w/read:0", "y:0", "y4:0"}
    read = by_tensor["w/read:0"]
    assert (read.src_node, read.src_device, read.dst_device) == \
        ("w/read", "/job:ps/task:0", "/job:worker/task:0")
    assert sorted(read.dst_nodes) == ["y", "y4"]       # one tensor, sent once, two consumers
    assert read.bytes == 3 * 2 * 4
    assert by_tensor["y4:0"].bytes == 4 * 2 * 4
    assert by_tensor["y:0"].bytes is None               # [?, 2]: unknown until run
    assert by_tensor["y:0"].dst_nodes == ("mul",)


def test_grouping_job_task_device_and_distinct_colours():
    assert device_chain(W1) == [("job:/job:worker", "/job:worker", "job"),
                                ("task:/job:worker/task:1", "/job:worker/task:1", "task"),
                                (f"dev:{W1}", "/device:CPU:0", "device")]
    assert [kind for _, _, kind in device_chain("/job:ps/task:0")] == ["job", "task"]
    assert [kind for _, _, kind in device_chain(CLIENT)] == ["job"]
    assert device_chain("") == [("dev:", "unplaced", "device")]

    graph, _ = pinned_graph()
    placement = from_graph(graph)
    view = view_data(placement)
    groups = {g["id"]: g for g in view["groups"]}
    nodes = {n["name"]: n for n in view["nodes"]}
    assert nodes["y"]["parent"] == "task:/job:worker/task:0"
    assert groups["task:/job:worker/task:0"]["parent"] == "job:/job:worker"
    assert groups["job:/job:worker"]["parent"] is None
    assert nodes["side"]["parent"] == "dev:" and nodes["side"]["color"] == UNPLACED
    colours = {d: nodes[n]["color"] for d, n in [("/job:ps/task:0", "w"),
                                                 ("/job:worker/task:0", "y"),
                                                 ("/job:worker/task:1", "total")]}
    assert len(set(colours.values()) | {UNPLACED}) == 4
    assert colours == {d: color_of(d, placement.devices) for d in colours}
    assert [e["device"] for e in view["legend"]] == ["unplaced", *placement.devices]
    index = [g["id"] for g in view["groups"]]
    assert all(g["parent"] is None or index.index(g["parent"]) < index.index(g["id"])
               for g in view["groups"])                  # parents come first


def test_fetches_keep_only_what_they_need():
    graph, t = pinned_graph()
    full = from_graph(graph)
    only_y = prune(full, fetch_names(t["y"]))
    assert set(only_y.ops) == {"y", "x", "w/read", "w"}  # not w/Assign, not total
    assert [tr.tensor for tr in only_y.transfers] == ["w/read:0"]
    assert only_y.transfers[0].dst_nodes == ("y",)
    both = prune(full, fetch_names(["total:0", t["total4"].op]))
    assert {"total", "mul", "y", "total4", "y4", "x4"} <= set(both.ops)
    assert "side" not in both.ops and "w/Assign" not in both.ops
    assert fetch_names([t["w"], "y:0", "y"]) == ["w", "y"]


def test_bad_fetches():
    graph, _ = pinned_graph()
    with pytest.raises(ValueError, match="'nope'"):
        prune(from_graph(graph), fetch_names("nope:0"))
    with pytest.raises(TypeError, match="int"):
        fetch_names([3])


def fake_run_metadata():
    """A traced step shaped like the master's: ps -> worker 0 -> worker 1, a feed, a fetch,
    and a control edge from the ps to worker 1."""
    meta = tf.RunMetadata()

    def node(pg, name, op, device, inputs=(), **attrs):
        n = pg.node.add(name=name, op=op, device=device)
        n.input.extend(inputs)
        for key, value in attrs.items():
            if isinstance(value, str):
                n.attr[key].s = value.encode()
            else:
                n.attr[key].type = value
        return n

    ps, w0, w1 = (meta.partition_graphs.add() for _ in range(3))
    node(ps, "w", "VariableV2", PS)
    node(ps, "w/read", "Identity", PS, ["w"])
    node(ps, "_send_w/read_0_1", "_Send", PS, ["w/read"], tensor_name="w/read:0",
         send_device=PS, recv_device=W0)
    node(ps, "_ctl_const_w_ctl_3", "Const", PS, ["^w"])
    node(ps, "_send_w_ctl_3", "_Send", PS, ["_ctl_const_w_ctl_3"], tensor_name="^w",
         send_device=PS, recv_device=W1)
    node(w0, "_recv_x_0_0", "_Recv", W0, tensor_name="x:0", send_device=CLIENT,
         recv_device=W0, tensor_type=1)
    node(w0, "_recv_w/read_0_1", "_Recv", W0, tensor_name="w/read:0", send_device=PS,
         recv_device=W0, tensor_type=1)
    node(w0, "y", "MatMul", W0, ["_recv_x_0_0", "_recv_w/read_0_1"])
    node(w0, "_send_y_0_2", "_Send", W0, ["y"], tensor_name="y:0", send_device=W0,
         recv_device=W1)
    node(w1, "_recv_y_0_2", "_Recv", W1, tensor_name="y:0", send_device=W0, recv_device=W1,
         tensor_type=1)
    node(w1, "_recv_w_ctl_3", "_Recv", W1, tensor_name="^w", send_device=PS, recv_device=W1,
         tensor_type=1)
    node(w1, "total", "Sum", W1, ["_recv_y_0_2", "^_recv_w_ctl_3"])
    node(w1, "_send_total_0_fetch", "_Send", W1, ["total"], tensor_name="total:0",
         send_device=W1, recv_device=CLIENT)

    def stat(device, name, start, took, outputs=()):
        dev = next((d for d in meta.step_stats.dev_stats if d.device == device), None) or \
            meta.step_stats.dev_stats.add(device=device)
        ns = dev.node_stats.add(node_name=name, all_start_micros=start, op_end_rel_micros=took)
        for slot, (dims, nbytes) in enumerate(outputs):
            out = ns.output.add(slot=slot)
            out.tensor_description.dtype = 1
            for d in dims:
                out.tensor_description.shape.dim.add(size=d)
            out.tensor_description.allocation_description.requested_bytes = nbytes
    stat(PS, "w", 1000, 7, [((3, 2), 24)])
    stat(PS, "w/read", 1010, 2, [((3, 2), 24)])
    stat(W0, "_recv_x_0_0", 1020, 3, [((5, 3), 60)])
    stat(W0, "_recv_w/read_0_1", 1021, 900, [((3, 2), 24)])
    stat(W0, "y", 1930, 150, [((5, 2), 40)])
    stat(W1, "_recv_y_0_2", 1015, 1200, [((5, 2), 40)])
    stat(W1, "total", 2300, 60, [((), 4)])
    return meta


def test_actual_placement_from_run_metadata():
    placement = from_run_metadata(fake_run_metadata())
    assert placement.actual and placement.devices == [PS, W0, W1]
    ops = placement.ops
    assert set(ops) == {"w", "w/read", "y", "total", "x", "fetch:total:0"}  # no Send/Recv
    assert ops["y"].inputs == ("x", "w/read") and ops["total"].inputs == ("y",)
    assert ops["total"].control_inputs == ("w",)
    assert (ops["x"].device, ops["x"].op, ops["x"].shape) == (CLIENT, "_Feed", "[5, 3]")
    assert ops["fetch:total:0"].device == CLIENT and ops["fetch:total:0"].inputs == ("total",)
    assert (ops["y"].dtype, ops["y"].shape) == ("float32", "[5, 2]")
    assert (ops["y"].start_us, ops["y"].time_us) == (930, 150)
    assert ops["w"].start_us == 0


def test_run_metadata_transfers_pair_sends_and_recvs():
    placement = from_run_metadata(fake_run_metadata())
    got = {t.tensor: (t.src_node, t.dst_nodes, t.src_device, t.dst_device, t.bytes)
           for t in placement.transfers}
    assert got == {
        "x:0": ("x", ("y",), CLIENT, W0, 60),
        "w/read:0": ("w/read", ("y",), PS, W0, 24),
        "y:0": ("y", ("total",), W0, W1, 40),
        "^w": ("w", ("total",), PS, W1, None),          # no stats for the dummy
        "total:0": ("total", ("fetch:total:0",), W1, CLIENT, 4),
    }
    recv_time = {t.tensor: t.time_us for t in placement.transfers}
    assert recv_time["w/read:0"] == 900 and recv_time["y:0"] == 1200


def test_run_metadata_edges_are_transfers_not_send_recv_nodes():
    view = view_data(from_run_metadata(fake_run_metadata()))
    names = {n["name"] for n in view["nodes"]}
    assert not any(n.startswith(("_send", "_recv", "_ctl")) for n in names)
    edges = {(e["source"], e["target"]): e for e in view["edges"]}
    assert edges[("op:w/read", "op:y")]["kind"] == "transfer"
    assert edges[("op:w/read", "op:y")]["label"] == "24 B"
    assert edges[("op:w", "op:total")]["kind"] == "transfer"       # the control edge
    assert edges[("op:w", "op:total")]["label"] == "control"
    assert edges[("op:w", "op:w/read")]["kind"] == "data"
    assert all(e["kind"] == "transfer" for e in view["edges"] if e["source"] != "op:w"
               or e["target"] != "op:w/read")
    client = {n["name"]: n for n in view["nodes"] if n["device"] == CLIENT}
    assert set(client) == {"x", "fetch:total:0"} and client["x"]["parent"] == "job:/job:client"
    assert view["summary"]["ops"] == 4 and view["summary"]["transfers"] == 5


def test_run_metadata_with_graph_fills_types_and_requested_devices():
    graph, _ = pinned_graph()
    meta = fake_run_metadata()
    meta.step_stats.Clear()
    placement = from_run_metadata(meta, graph)
    assert placement.ops["y"].requested == "/job:worker/task:0"
    assert (placement.ops["y"].dtype, placement.ops["y"].shape) == ("float32", "[?, 2]")
    assert placement.ops["x"].op == "Placeholder"
    read = next(t for t in placement.transfers if t.tensor == "w/read:0")
    assert read.bytes == 24                              # dtype x static shape [3, 2]


def test_run_metadata_without_partition_graphs():
    with pytest.raises(ValueError, match="output_partition_graphs"):
        from_run_metadata(tf.RunMetadata())
