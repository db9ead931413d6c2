"""The Timeline's browser input: waits apart from compute, bars packed so none overlaps
another in its row, and several runs side by side."""
from __future__ import annotations

import pytest
from test_timeline_model import PS, W0, W1, make_run_metadata, probe_step

from nbcluster.jupyter.widgets.timeline import Timeline
from nbcluster.jupyter.widgets.timeline_model import from_run_metadata
from nbcluster.jupyter.widgets.timeline_view import bar_kind, pack_rows, view_data

pytestmark = pytest.mark.timeout(30)


def overlaps_in_a_row(data) -> list:
    """Pairs of bars of one lane and row that overlap in time."""
    found = []
    by_row: dict = {}
    for i, op in enumerate(data["ops"]):
        by_row.setdefault((op["lane"], op["row"]), []).append(i)
    for bars in by_row.values():
        bars.sort(key=lambda i: data["ops"][i]["start"])
        for a, b in zip(bars, bars[1:]):
            if data["ops"][b]["start"] < data["ops"][a]["end"]:
                found.append((data["ops"][a]["name"], data["ops"][b]["name"]))
    return found


def test_a_recv_is_a_wait_a_send_a_send_and_the_rest_compute():
    assert bar_kind("_Recv", "_recv_x_0") == "wait"
    assert bar_kind("_HostRecv", "r") == "wait"
    assert bar_kind("RecvTensor", "RecvTensor edge_4_a from /job:ps") == "wait"  # TF tasks
    assert bar_kind("", "_recv_y_0_2") == "wait"  # no op type in the trace: by its name
    assert bar_kind("_Send", "s") == "send"
    assert bar_kind("MatMul", "_recv_looking_name") == "compute"
    kinds = {op["name"]: op["kind"] for op in view_data(from_run_metadata(probe_step()))["ops"]}
    assert kinds["_recv_w/read_0_1"] == "wait" and kinds["y"] == "compute"
    assert kinds["_send_y_0_2"] == "send"


def test_bars_overlapping_on_one_thread_get_rows_of_their_own():
    # a Recv waits on thread 7 while two ops run on it; thread 9 runs one op
    meta = make_run_metadata({W0: [("_recv_a", "_Recv", 0, 900, (), [], 7),
                                   ("b", "MatMul", 100, 50, (), [], 7),
                                   ("c", "Add", 120, 50, (), [], 7),
                                   ("d", "Add", 400, 50, (), [], 7),
                                   ("e", "Add", 100, 50, (), [], 9)]})
    data = view_data(from_run_metadata(meta))
    rows = {op["name"]: op["row"] for op in data["ops"]}
    assert overlaps_in_a_row(data) == []
    assert data["lanes"][0]["rows"] == 4
    assert rows["_recv_a"] == 0 and rows["b"] == rows["d"] == 1 and rows["c"] == 2
    assert rows["e"] == 3  # the other thread's rows come after
    assert pack_rows([]) == ([], 1)


def test_the_probe_step_packs_without_overlap():
    data = view_data(from_run_metadata(probe_step()))
    assert overlaps_in_a_row(data) == []


def test_two_runs_sit_side_by_side_with_a_gap():
    first = probe_step()
    second = make_run_metadata({W0: [("y", "MatMul", 0, 100, (), [])],
                                "/job:worker/replica:0/task:2/device:CPU:0":
                                    [("z", "Add", 50, 200, (), [])]})
    widget = Timeline([first, second])
    data = widget._data
    one, two = data["runs"]
    assert one == {"label": "run 1 · 9.5 ms", "start": 0.0, "end": 9497.0}
    assert two["label"] == "run 2 · 250 µs"
    assert two["start"] > one["end"] and two["end"] == pytest.approx(two["start"] + 250)
    assert data["duration"] == two["end"]
    # every lane of either run, in job → task → device order
    assert widget.lanes == [PS, W0, W1, "/job:worker/replica:0/task:2/device:CPU:0"]
    for op in data["ops"]:
        run = data["runs"][op["run"]]
        assert run["start"] <= op["start"] <= op["end"] <= run["end"] + 1e-6, op
    y2 = next(op for op in data["ops"] if op["run"] == 1 and op["name"] == "y")
    assert y2["start"] == two["start"]
    # transfers keep pointing at their own run's bars
    for t in data["transfers"]:
        assert data["ops"][t["send"]]["run"] == data["ops"][t["recv"]]["run"] == t["run"]
    assert overlaps_in_a_row(data) == []
    assert [op["run"] for op in widget.ops].count(1) == 2
    assert widget.duration_us == 9497 + 250
    assert widget.step is widget.steps[0] and len(widget.steps) == 2
    text = widget._repr_mimebundle_()[0]["text/plain"]
    assert text.count("Timeline:") == 2
    # the same as separate positional arguments
    assert Timeline(first, second)._data == data
    with pytest.raises(IndexError, match="run must be 0 to 1, got 2"):
        widget.chrome_trace(2)
    assert widget.chrome_trace(1)["otherData"]["duration_us"] == 250
    widget.close()


def test_an_empty_list_or_a_bad_member_is_refused():
    with pytest.raises(ValueError, match="at least one RunMetadata"):
        Timeline([])
    with pytest.raises(TypeError, match="RunMetadata, got str"):
        Timeline([probe_step(), "step.json"])
