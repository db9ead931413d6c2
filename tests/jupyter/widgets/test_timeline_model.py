"""Unit tests of timeline_model: hand-built RunMetadata → lanes, bars, transfers."""
from __future__ import annotations

import pytest

from nbcluster.jupyter.widgets import timeline_model
from nbcluster.proto import config_pb2

pytestmark = pytest.mark.timeout(30)

PS = "/job:ps/replica:0/task:0/device:CPU:0"
W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"
T0 = 1_700_000_000_000_000  # a wall-clock µs origin, like the tracer's
FLOAT32 = 1


def make_run_metadata(devices: dict, graphs: dict | None = None, thread_names=None):
    """devices: {device: [(name, op, start_us, dur_us, inputs, [(shape, bytes)], tid)]}
    (tid optional, default 7); graphs: {device: [(name, op, attrs)]} partition graphs."""
    meta = config_pb2.RunMetadata()
    for device, rows in devices.items():
        dev = meta.step_stats.dev_stats.add(device=device)
        for row in rows:
            name, op, start, dur, inputs, outputs = row[:6]
            tid = row[6] if len(row) > 6 else 7
            label = f"{name} = {op}({', '.join(inputs)})" if op else ""
            ns = dev.node_stats.add(node_name=name, all_start_micros=T0 + start,
                                    op_end_rel_micros=dur, all_end_rel_micros=dur,
                                    thread_id=tid, timeline_label=label)
            for slot, (shape, nbytes) in enumerate(outputs):
                desc = ns.output.add(slot=slot).tensor_description
                desc.dtype = FLOAT32
                for d in shape:
                    desc.shape.dim.add(size=d)
                desc.allocation_description.requested_bytes = nbytes
        for tid, tname in (thread_names or {}).get(device, {}).items():
            dev.thread_names[tid] = tname
    for device, nodes in (graphs or {}).items():
        graph = meta.partition_graphs.add()
        for name, op, attrs in nodes:
            node = graph.node.add(name=name, op=op, device=device)
            for key, value in attrs.items():
                node.attr[key].s = value.encode()
    return meta


def probe_step(**kwargs):
    """The probe's step: w on ps → y = matmul on worker 0 → total on worker 1."""
    return make_run_metadata({
        W1: [("mul/y", "Const", 0, 3, (), [((), 4)]),
             ("_recv_y_0_2", "_Recv", 19, 8971, (), [((2, 2), 16)]),
             ("total", "Sum", 9090, 388, ("mul", "total/Const"), [((), 4)]),
             ("_send_total_0_fetch", "_Send", 9492, 5, ("total",), [])],
        W0: [("_recv_x_0_0", "_Recv", 1060, 4, (), [((2, 3), 24)]),
             ("_recv_w/read_0_1", "_Recv", 1078, 5936, (), [((3, 2), 24)]),
             ("y", "MatMul", 7038, 149, ("_recv_x_0_0", "_recv_w/read_0_1"), [((2, 2), 16)]),
             ("_send_y_0_fetch", "_Send", 7194, 2, ("y",), []),
             ("_send_y_0_2", "_Send", 7205, 5, ("y",), [])],
        PS: [("w", "VariableV2", 4781, 7, (), [((3, 2), 24)]),
             ("_send_w/read_0_1", "_Send", 4800, 6, ("w/read",), [])],
    }, **kwargs)


def test_lanes_sort_job_then_task_number_then_device():
    gpu = "/job:worker/replica:0/task:2/device:GPU:0"
    cpu = "/job:worker/replica:0/task:2/device:CPU:0"
    ten = "/job:worker/replica:0/task:10/device:CPU:0"
    meta = make_run_metadata({ten: [("a", "Const", 0, 1, (), [])],
                              gpu: [("b", "Const", 0, 1, (), [])],
                              cpu: [("c", "Const", 0, 1, (), [])],
                              PS: [("d", "Const", 0, 1, (), [])]})
    assert timeline_model.from_run_metadata(meta).lanes == (PS, cpu, gpu, ten)


def test_bars_are_relative_to_the_first_start_and_zero_length_ops_stay():
    meta = make_run_metadata({W0: [("late", "MatMul", 500, 120, ("a", "b"), [((4, 4), 64)]),
                                   ("zero", "NoOp", 300, 0, (), [])],
                              W1: [("first", "Const", 200, 10, (), [])]})
    step = timeline_model.from_run_metadata(meta)
    bars = {b.name: b for b in step.ops}
    assert (bars["first"].start_us, bars["first"].end_us) == (0, 10)
    assert (bars["zero"].start_us, bars["zero"].end_us) == (100, 100)
    late = bars["late"]
    assert (late.start_us, late.end_us, late.op, late.inputs) == (300, 420, "MatMul", ("a", "b"))
    assert late.outputs == (timeline_model.Output("float32", (4, 4), 64),)
    assert step.duration_us == 420
    assert step.origin_us == T0 + 200
    assert [b.name for b in step.ops] == ["zero", "late", "first"]  # lane W0 first, by start


def test_nanosecond_fields_win_over_micros():
    meta = make_run_metadata({W0: [("a", "Const", 0, 0, (), []), ("b", "Const", 0, 0, (), [])]})
    a, b = meta.step_stats.dev_stats[0].node_stats
    a.all_start_nanos, a.all_end_rel_nanos = T0 * 1000, 1500
    b.all_start_nanos, b.op_end_rel_nanos = T0 * 1000 + 2250, 500
    bars = {x.name: x for x in timeline_model.from_run_metadata(meta).ops}
    assert (bars["a"].start_us, bars["a"].end_us) == (0, 1.5)
    assert (bars["b"].start_us, bars["b"].end_us) == (2.25, 2.75)


def test_op_type_falls_back_to_the_partition_graph():
    meta = make_run_metadata({W0: [("y", "", 0, 5, (), [])]},
                             graphs={W0: [("y", "MatMul", {})]})
    assert timeline_model.from_run_metadata(meta).ops[0].op == "MatMul"


def test_transfers_pair_by_name_without_partition_graphs():
    step = timeline_model.from_run_metadata(probe_step())
    got = [(t.src_device, t.dst_device, t.tensor, t.bytes, t.start_us, t.end_us)
           for t in step.transfers]
    # send start → recv end; bytes from the recv's output; relative to the first start (W1's 0)
    assert got == [(PS, W0, "w/read:0", 24, 4800, 1078 + 5936),
                   (W0, W1, "y:0", 16, 7205, 19 + 8971)]
    assert [(t.send.name, t.recv.name) for t in step.transfers] == [
        ("_send_w/read_0_1", "_recv_w/read_0_1"), ("_send_y_0_2", "_recv_y_0_2")]


def test_feeds_and_fetches_are_bars_not_transfers():
    step = timeline_model.from_run_metadata(probe_step())
    names = {b.name for b in step.ops}
    assert {"_recv_x_0_0", "_send_y_0_fetch", "_send_total_0_fetch"} <= names
    ends = {n for t in step.transfers for n in (t.send.name, t.recv.name)}
    assert not ends & {"_recv_x_0_0", "_send_y_0_fetch", "_send_total_0_fetch"}


def test_transfers_pair_by_partition_graph_attrs():
    # Names that do not match: only the attrs can pair them.
    meta = make_run_metadata(
        {W0: [("_send_a", "_Send", 0, 2, ("y",), []),
              ("_recv_feed", "_Recv", 0, 1, (), [((1,), 4)])],
         W1: [("_recv_b", "_Recv", 1, 30, (), [((5, 5), 100)])]},
        graphs={W0: [("_send_a", "_Send", {"tensor_name": "y:0", "send_device": W0,
                                           "recv_device": W1}),
                     ("_recv_feed", "_Recv", {"tensor_name": "x:0", "send_device": "/job:client",
                                              "recv_device": W0})],
                W1: [("_recv_b", "_Recv", {"tensor_name": "y:0", "send_device": W0,
                                           "recv_device": W1})]})
    step = timeline_model.from_run_metadata(meta)
    assert [(t.tensor, t.send.name, t.recv.name, t.bytes, t.start_us, t.end_us)
            for t in step.transfers] == [("y:0", "_send_a", "_recv_b", 100, 0, 31)]


def test_a_send_to_the_same_device_is_not_a_transfer():
    meta = make_run_metadata({W0: [("_send_k", "_Send", 0, 1, ("a",), []),
                                   ("_recv_k", "_Recv", 1, 1, (), [((1,), 4)])]})
    assert timeline_model.from_run_metadata(meta).transfers == ()


def test_thread_names_are_kept_per_device():
    meta = make_run_metadata({W0: [("a", "Const", 0, 1, (), [], 11)]},
                             thread_names={W0: {11: "executor-1"}})
    step = timeline_model.from_run_metadata(meta)
    assert step.thread_names == {W0: {11: "executor-1"}}
    assert step.ops[0].thread_id == 11


@pytest.mark.parametrize("bad", [None, {"step_stats": []}, config_pb2.StepStats()])
def test_not_a_run_metadata_is_a_type_error(bad):
    with pytest.raises(TypeError, match=type(bad).__name__):
        timeline_model.from_run_metadata(bad)


def test_an_untraced_run_is_a_value_error_naming_full_trace():
    meta = config_pb2.RunMetadata()
    meta.step_stats.dev_stats.add(device=W0)  # a device, but no op ran traced
    with pytest.raises(ValueError, match="FULL_TRACE"):
        timeline_model.from_run_metadata(meta)
    with pytest.raises(ValueError, match="no step_stats"):
        timeline_model.from_run_metadata(config_pb2.RunMetadata())


def test_a_device_name_the_parser_refuses_gets_the_last_lane():
    odd = "/job:worker/task:0/stream:all"
    meta = make_run_metadata({odd: [("a", "Const", 0, 1, (), [])],
                              W1: [("b", "Const", 0, 1, (), [])]})
    assert timeline_model.from_run_metadata(meta).lanes == (W1, odd)


def tensorflow_step(graphs: bool):
    """A step on TF tasks as TF reports it: no _Send/_Recv stats, one RecvTensor stat on
    the receiver per remote tensor (x fed on the worker and sent to the ps; a from the
    ps to the worker), its label naming the rendezvous edge and both devices."""
    meta = make_run_metadata({W0: [("b", "MatMul", 400, 30, ("a_S3", "a_S3"), [((4, 4), 64)])],
                              PS: [("a", "Mul", 200, 20, ("a/y", "_recv_x_0_S1"),
                                    [((4, 4), 64)])]})
    for device, start, dur, edge, src in [(PS, 100, 90, "edge_9__recv_x_0", W0),
                                          (W0, 230, 160, "edge_4_a", PS)]:
        dev = meta.step_stats.dev_stats.add(device=device)
        ns = dev.node_stats.add(node_name="RecvTensor", all_start_micros=T0 + start,
                                all_end_rel_micros=dur, thread_id=3,
                                timeline_label=f"[64B] [3.2Mb/s] {edge} from {src} to {device}")
        ns.output.add(slot=0).tensor_description.allocation_description.requested_bytes = 64
    if graphs:  # TF's partition graphs: each _Send names its edge and reads the producer
        for device, nodes in {W0: [("_recv_x_0", "_Recv", (), "x:0", W0),
                                   ("_recv_x_0_S0", "_Send", ("_recv_x_0",),
                                    "edge_9__recv_x_0", PS)],
                              PS: [("a_S2", "_Send", ("a",), "edge_4_a", W0)]}.items():
            graph = meta.partition_graphs.add()
            for name, op, inputs, tensor, recv_device in nodes:
                node = graph.node.add(name=name, op=op, device=device, input=inputs)
                node.attr["tensor_name"].s = tensor.encode()
                node.attr["send_device"].s = device.encode()
                node.attr["recv_device"].s = recv_device.encode()
                node.attr["client_terminated"].b = name == "_recv_x_0"
    return meta


def test_tensorflow_recv_tensor_stats_become_transfers_through_the_partition_graphs():
    step = timeline_model.from_run_metadata(tensorflow_step(graphs=True))
    got = [(t.src_device, t.dst_device, t.tensor, t.bytes, t.start_us, t.end_us, t.send.name,
            t.recv.name) for t in step.transfers]
    # times relative to the first start (the ps' RecvTensor at 100); a leaves its Mul at 120
    assert got == [(W0, PS, "x:0", 64, 0, 90, "_recv_x_0_S0",
                    f"RecvTensor edge_9__recv_x_0 from {W0}"),
                   (PS, W0, "a:0", 64, 120, 290, "a", f"RecvTensor edge_4_a from {PS}")]
    # the feed's send left no stat: a zero-length _Send marker on the worker stands for it
    marker = next(b for b in step.ops if b.name == "_recv_x_0_S0")
    assert (marker.device, marker.op, marker.start_us, marker.end_us) == (W0, "_Send", 0, 0)
    assert {b.op for b in step.ops if b.name.startswith("RecvTensor")} == {"RecvTensor"}


def test_tensorflow_recv_tensor_stats_pair_by_edge_name_without_graphs():
    step = timeline_model.from_run_metadata(tensorflow_step(graphs=False))
    got = [(t.src_device, t.dst_device, t.tensor, t.send.name) for t in step.transfers]
    assert got == [(W0, PS, "_recv_x_0:0", "_Send edge_9__recv_x_0"), (PS, W0, "a:0", "a")]


def test_a_recv_tensor_from_a_device_that_reported_nothing_draws_no_arrow():
    meta = make_run_metadata({W0: [("b", "MatMul", 0, 5, (), [])]})
    ns = meta.step_stats.dev_stats[0].node_stats.add(
        node_name="RecvTensor", all_start_micros=T0, all_end_rel_micros=3,
        timeline_label=f"[4B] [1.0Mb/s] edge_1_z from {W1} to {W0}")
    ns.output.add(slot=0).tensor_description.allocation_description.requested_bytes = 4
    step = timeline_model.from_run_metadata(meta)
    assert step.transfers == () and step.lanes == (W0,)
