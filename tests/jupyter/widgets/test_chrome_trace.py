"""Unit tests of chrome_trace: the Chrome trace event format of a traced step."""
from __future__ import annotations

import json
import pathlib

import pytest
from test_timeline_model import PS, W0, W1, make_run_metadata, probe_step

from nbcluster.jupyter.widgets import chrome_trace, timeline_model

pytestmark = pytest.mark.timeout(30)


def trace_of(meta) -> dict:
    return chrome_trace.chrome_trace(timeline_model.from_run_metadata(meta))


def by_phase(trace: dict, phase: str) -> list:
    return [e for e in trace["traceEvents"] if e["ph"] == phase]


def check_trace(trace: dict, step) -> None:
    """What any valid trace of `step` keeps; shared with the cluster test."""
    trace = json.loads(json.dumps(trace))  # JSON-clean: no tuples, NaN or numpy values
    meta = by_phase(trace, "M")
    names = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    order = {e["pid"]: e["args"]["sort_index"] for e in meta if e["name"] == "process_sort_index"}
    assert [names[p] for p in sorted(names, key=order.get)] == list(step.lanes)
    complete = by_phase(trace, "X")
    assert len(complete) == len(step.ops)
    for event in complete:
        assert event["ts"] >= 0 and event["dur"] >= 0, event
        assert event["ts"] + event["dur"] <= step.duration_us + 1e-6
    slices = {(e["pid"], e["tid"], e["name"]): e for e in complete}
    starts, finishes = by_phase(trace, "s"), by_phase(trace, "f")
    assert len(starts) == len(finishes) == len(step.transfers)
    finish_of = {e["id"]: e for e in finishes}
    assert len(finish_of) == len(finishes)  # ids are unique
    for start, transfer in zip(starts, step.transfers):
        finish = finish_of.pop(start["id"])
        assert (finish["name"], finish["cat"]) == (start["name"], start["cat"])
        assert start["bp"] == finish["bp"] == "e"
        assert names[start["pid"]] == transfer.src_device
        assert names[finish["pid"]] == transfer.dst_device
        # each end sits inside its op's slice, which "bp": "e" binds it to
        send = slices[(start["pid"], start["tid"], transfer.send.name)]
        recv = slices[(finish["pid"], finish["tid"], transfer.recv.name)]
        assert send["ts"] <= start["ts"] <= send["ts"] + send["dur"]
        assert recv["ts"] <= finish["ts"] <= recv["ts"] + recv["dur"]
    assert not finish_of


def test_probe_step_trace_is_valid_and_complete():
    meta = probe_step()
    step = timeline_model.from_run_metadata(meta)
    trace = trace_of(meta)
    check_trace(trace, step)
    assert len(by_phase(trace, "s")) == 2
    assert trace["otherData"]["origin_unix_us"] == step.origin_us


def test_complete_events_carry_op_type_inputs_and_outputs():
    meta = make_run_metadata({W0: [("y", "MatMul", 10, 90, ("x", "w"), [((2, 3), 24)], 5)]})
    (event,) = by_phase(trace_of(meta), "X")
    assert (event["name"], event["cat"], event["ts"], event["dur"], event["tid"]) == (
        "y", "MatMul", 0, 90, 5)
    assert event["args"]["inputs"] == ["x", "w"]
    assert event["args"]["outputs"] == [{"dtype": "float32", "shape": [2, 3], "bytes": 24}]


def test_a_thread_per_thread_id_named_from_thread_names():
    meta = make_run_metadata({W0: [("a", "Const", 0, 1, (), [], 1),
                                   ("b", "Const", 0, 1, (), [], 2)],
                              W1: [("c", "Const", 0, 1, (), [], 1)]},
                             thread_names={W0: {1: "rpc_0", 2: "pool_1"}})
    trace = trace_of(meta)
    pid = {e["args"]["name"]: e["pid"] for e in by_phase(trace, "M") if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in by_phase(trace, "M")
               if e["name"] == "thread_name"}
    assert threads == {(pid[W0], 1): "rpc_0", (pid[W0], 2): "pool_1",
                       (pid[W1], 1): "thread 1"}
    assert {(e["pid"], e["tid"]) for e in by_phase(trace, "X")} == set(threads)


def test_flow_args_name_the_tensor_and_bytes():
    trace = trace_of(probe_step())
    args = [e["args"] for e in by_phase(trace, "s")]
    assert [(a["tensor"], a["bytes"], a["from"], a["to"]) for a in args] == [
        ("w/read:0", 24, PS, W0), ("y:0", 16, W0, W1)]


@pytest.mark.parametrize("as_path", [str, pathlib.Path])
def test_write_round_trips_through_json(tmp_path, as_path):
    step = timeline_model.from_run_metadata(probe_step())
    written = chrome_trace.write_chrome_trace(step, as_path(tmp_path / "step.json"))
    assert written == tmp_path / "step.json" and isinstance(written, pathlib.Path)
    expected = json.loads(json.dumps(chrome_trace.chrome_trace(step)))
    assert json.loads(written.read_text()) == expected


def test_a_bad_path_is_a_type_error():
    step = timeline_model.from_run_metadata(probe_step())
    with pytest.raises(TypeError, match="got int"):
        chrome_trace.write_chrome_trace(step, 42)
