"""Unit tests of the Timeline widget: properties, the view's input data, fallbacks, errors."""
from __future__ import annotations

import json

import pytest
import traitlets
from test_timeline_model import PS, W0, W1, make_run_metadata, probe_step

from nbcluster.jupyter.widgets import timeline as timeline_module
from nbcluster.jupyter.widgets.devices import color_of
from nbcluster.jupyter.widgets.timeline import Timeline
from nbcluster.proto import config_pb2

pytestmark = pytest.mark.timeout(30)

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def probe():
    widget = Timeline(probe_step())
    yield widget
    widget.close()


def test_properties_describe_the_step(probe):
    assert probe.lanes == [PS, W0, W1]
    assert probe.duration_us == 9497
    assert len(probe.ops) == 11
    assert probe.ops[0] == {"device": PS, "name": "w", "op": "VariableV2",
                            "start_us": 4781, "end_us": 4788, "run": 0}
    assert all(0 <= op["start_us"] <= op["end_us"] <= probe.duration_us for op in probe.ops)
    assert probe.transfers == [
        {"src_device": PS, "dst_device": W0, "tensor": "w/read:0", "bytes": 24,
         "start_us": 4800, "end_us": 7014, "run": 0},
        {"src_device": W0, "dst_device": W1, "tensor": "y:0", "bytes": 16,
         "start_us": 7205, "end_us": 8990, "run": 0}]


def test_view_data_indexes_lanes_and_ops(probe):
    data = probe._data
    json.dumps(data)  # it crosses the comm as JSON
    assert [lane["device"] for lane in data["lanes"]] == probe.lanes
    colors = [color_of(d, probe.lanes) for d in probe.lanes]
    assert [lane["color"] for lane in data["lanes"]] == colors
    assert data["duration"] == probe.duration_us
    for op, source in zip(data["ops"], probe.ops):
        assert data["lanes"][op["lane"]]["device"] == source["device"]
        assert (op["name"], op["start"], op["end"]) == (
            source["name"], source["start_us"], source["end_us"])
    y = next(op for op in data["ops"] if op["name"] == "y")
    assert (y["op"], y["outputs"]) == ("MatMul", ["float32[2,2] 16 B"])
    for transfer in data["transfers"]:
        send, recv = data["ops"][transfer["send"]], data["ops"][transfer["recv"]]
        assert (send["op"], send["lane"], recv["op"], recv["lane"]) == (
            "_Send", transfer["src"], "_Recv", transfer["dst"])
        assert (transfer["start"], transfer["end"]) == (send["start"], recv["end"])


def test_each_thread_of_a_device_gets_its_own_row():
    meta = make_run_metadata({W0: [("a", "MatMul", 0, 50, (), [], 3),
                                   ("b", "MatMul", 10, 50, (), [], 9),
                                   ("c", "Add", 60, 5, (), [], 3)]})
    widget = Timeline(meta)
    assert widget._data["lanes"][0]["rows"] == 2
    assert [(op["name"], op["row"]) for op in widget._data["ops"]] == [
        ("a", 0), ("b", 1), ("c", 0)]
    widget.close()


def test_mimebundle_has_the_widget_view_and_text_fallbacks(probe):
    data, _ = probe._repr_mimebundle_()
    assert data[WIDGET_MIME]["model_id"] == probe.model_id
    assert data["text/plain"] == "Timeline: 11 ops on 3 devices over 9.5 ms; 2 transfers (40 B)"
    page = data["text/html"]
    for device in probe.lanes:
        assert page.count(f"<code>{device}</code>") == 1
    assert page.count("<rect ") == len(probe.ops)  # the static SVG: one bar per op


def test_html_fallback_reports_busy_time_and_escapes_names():
    meta = make_run_metadata({W0: [("a<b>", "MatMul", 0, 100, (), [], 1),
                                   ("c", "MatMul", 50, 100, (), [], 2),
                                   ("d&e", "Add", 400, 100, (), [], 1)]})
    widget = Timeline(meta)
    page = widget._repr_mimebundle_()[0]["text/html"]
    assert "a&lt;b&gt;" in page and "d&amp;e" in page and "a<b>" not in page
    assert "<td>250 µs</td>" in page  # [0, 150) ∪ [400, 500): overlap counted once
    assert timeline_module.busy_us(widget.step, W0) == 250
    widget.close()


def test_window_accepts_a_range_or_empty_and_refuses_others(probe):
    probe.window = [10.0, 200.0]
    assert probe.window == [10.0, 200.0]
    probe.window = []
    for bad in ([5.0, 1.0], [1.0, 2.0, 3.0], [4.0]):
        with pytest.raises(traitlets.TraitError, match="window"):
            probe.window = bad
    assert probe.window == []


def test_chrome_trace_methods(probe, tmp_path):
    trace = probe.chrome_trace()
    assert sum(e["ph"] == "X" for e in trace["traceEvents"]) == len(probe.ops)
    path = probe.save_chrome_trace(tmp_path / "t.json")
    assert json.loads(path.read_text()) == json.loads(json.dumps(trace))


def test_bad_input_errors():
    with pytest.raises(TypeError, match="RunMetadata, got str"):
        Timeline("step.json")
    with pytest.raises(ValueError, match="FULL_TRACE"):
        Timeline(config_pb2.RunMetadata())
