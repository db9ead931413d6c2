"""Timeline of a real traced step: ps and two workers, each task a process on 127.0.0.1."""
from __future__ import annotations

import time

import numpy as np
import pytest
from test_chrome_trace import check_trace

import nbcluster as tf
from nbcluster.jupyter.widgets import timeline_model
from nbcluster.jupyter.widgets.timeline import Timeline

from cluster_graphs import three_task_graph

pytestmark = pytest.mark.timeout(120)

PS = "/job:ps/replica:0/task:0/device:CPU:0"
W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"


def traced_step(cluster) -> tuple:
    """Runs one step with FULL_TRACE (which also returns the partition graphs).

    Returns:
      (run_metadata, wall-clock µs before the run, after it, {tensor: nbytes}).
    """
    g = three_task_graph(np.ones((30, 20), np.float32))
    graph, x, y, total, init = g.graph, g.x, g.y, g.total, g.init
    with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
        sess.run(init)
        meta = tf.RunMetadata()
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        before = time.time() * 1e6
        y_value, _ = sess.run([y, total], {x: np.ones((8, 30), np.float32)},
                              options=options, run_metadata=meta)
        after = time.time() * 1e6
    # the real graphs' attrs alone pair both transfers (the client's feed and fetches excluded)
    assert len(timeline_model._pairs_by_attrs(meta.partition_graphs)) == 2
    return meta, before, after, {"w/read:0": 30 * 20 * 4, "y:0": y_value.nbytes}


def test_timeline_of_a_step_across_ps_and_two_workers(cluster_factory, tmp_path):
    cluster = cluster_factory({"ps": 1, "worker": 2})
    meta, before, after, nbytes = traced_step(cluster)
    by_names = tf.RunMetadata()
    by_names.CopyFrom(meta)
    del by_names.partition_graphs[:]  # transfers then pair by the Send/Recv names
    found = []
    for traced in (meta, by_names):
        timeline = Timeline(traced)
        assert timeline.lanes == [PS, W0, W1]
        # Every bar lies inside the step, and the step inside the client's run call.
        origin = timeline.step.origin_us
        assert before - 1000 <= origin <= origin + timeline.duration_us <= after + 1000
        for op in timeline.ops:
            assert 0 <= op["start_us"] <= op["end_us"] <= timeline.duration_us, op
        assert {"y", "total", "w"} <= {op["name"] for op in timeline.ops}
        transfers = {(t["src_device"], t["dst_device"], t["tensor"], t["bytes"])
                     for t in timeline.transfers}
        assert transfers == {(PS, W0, "w/read:0", nbytes["w/read:0"]),
                             (W0, W1, "y:0", nbytes["y:0"])}
        for t in timeline.transfers:
            assert 0 <= t["start_us"] <= t["end_us"] <= timeline.duration_us
        check_trace(timeline.chrome_trace(), timeline.step)
        path = timeline.save_chrome_trace(tmp_path / f"step{len(found)}.json")
        assert path.stat().st_size > 0
        found.append(transfers)
        timeline.close()
    assert found[0] == found[1]  # attrs and names pair the same sends and recvs
