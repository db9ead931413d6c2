"""Jupyter tier: the builder's `%%tfserver cluster` cell parses, and the magic starts the same
cluster; the cell body's per-job device syntax."""
from __future__ import annotations

import pytest
from IPython.utils.capture import capture_output

from nbcluster.jupyter.cluster_body import parse_cluster_body
from nbcluster.jupyter.widgets import ClusterBuilder
from nbcluster.launch import Cluster

from process_checks import wait_gone

pytestmark = pytest.mark.timeout(180)


def _run_cell(ip, cell: str) -> Cluster:
    line, body = cell.split("\n", 1)
    assert line.startswith("%%tfserver ")
    with capture_output() as cap:
        ip.run_cell_magic("tfserver", line[len("%%tfserver "):], body)
    assert not cap.stderr, cap.stderr
    return ip.user_ns[line.split()[2]]


def _shape(cluster: Cluster) -> dict:
    """{(job, index): device names} from each task's own GetStatus answer."""
    return {(s.job, s.index): (s.state, s.devices) for s in cluster.status()}


def _same_cluster_through_the_magic(ip, builder: ClusterBuilder) -> None:
    launched = builder.launch()
    try:
        cell_cluster = _run_cell(ip, builder.cell)
        assert _shape(cell_cluster) == _shape(launched)
        assert all(state == "up" for state, _ in _shape(launched).values())
        pids = list(cell_cluster.pids.values())
        ip.run_line_magic("tfserver", "stop " + builder.name)
        assert wait_gone(pids, 10.0) == []
    finally:
        builder.close()


def test_the_default_cell_starts_the_same_cluster(ip):
    builder = ClusterBuilder(name="from_cell")
    assert builder.cell == "%%tfserver cluster from_cell\nps: 1\nworker: 2\n"
    _same_cluster_through_the_magic(ip, builder)


def test_a_cell_with_addresses_starts_the_same_cluster(ip):
    builder = ClusterBuilder(name="addressed")
    builder.remove_job("worker")
    builder.add_job("worker", tasks=2, hosts=["local", "127.0.0.1"])
    assert "worker: [\"127.0.0.1:0\", \"127.0.0.1:0\"]" in builder.cell
    _same_cluster_through_the_magic(ip, builder)


def test_a_cell_with_devices_starts_the_same_devices(ip):
    builder = ClusterBuilder(name="devices")
    builder.remove_job("worker")
    builder.add_job("worker", tasks=2, cpus=[2, 3])
    assert "worker:\n  tasks: 2\n  cpus: [2, 3]\n" in builder.cell
    _same_cluster_through_the_magic(ip, builder)


def test_the_body_takes_a_job_mapping_with_devices():
    request = parse_cluster_body("ps: 1\nworker:\n  tasks: 2\n  cpus: 2\n"
                                 "  gpus: [\"0\", none]\n")
    assert request.counts == {"ps": 1, "worker": 2}
    assert request.devices == {"worker": {"cpus": 2, "gpus": ["0", "none"]}}
    request = parse_cluster_body("ps: [127.0.0.1:2222]\nworker:\n  addresses: [h1:0, h2:0]\n"
                                 "  gpus: \"0,1\"\n")
    assert request.spec.as_dict() == {"ps": ["127.0.0.1:2222"], "worker": ["h1:0", "h2:0"]}
    assert request.devices == {"worker": {"gpus": "0,1"}}
    assert parse_cluster_body("ps: 1\nworker: {tasks: 2}").devices is None


@pytest.mark.parametrize("body, words", [
    ("worker:\n  tasks: 2\n  cpu: 2", "job 'worker': unknown key 'cpu'"),
    ("worker:\n  cpus: 2", "give exactly one of 'tasks: N' and 'addresses"),
    ("worker:\n  tasks: 2\n  addresses: [h:1]", "give exactly one of"),
    ("worker:\n  tasks: two", "'tasks' must be a whole number, not 'two'"),
    ("worker:\n  tasks: 2\n  cpus: [1]", "cpus [1] has 1 entries for 2 tasks"),
    ("worker:\n  tasks: 1\n  gpus: gpu0", "bad GPU list 'gpu0'"),
    ("worker:\n  tasks: 1\n  cpus: 0", "/job:worker/task:0: the CPU count must be a whole "
                                       "number >= 1, not 0"),
    ("ps: 1\nworker:\n  addresses: [h:1]", "give every job either a task count or its "
                                           "addresses"),
])
def test_bad_job_mappings_are_named(body, words):
    with pytest.raises((ValueError, TypeError)) as info:
        parse_cluster_body(body)
    assert words in str(info.value)
