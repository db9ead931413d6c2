"""ClusterDashboard on real task processes: states, counters, kill and restart, log tail, stop."""
from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

from nbcluster.jupyter.widgets import ClusterDashboard
from nbcluster.jupyter.widgets.units import format_bytes

from cluster_graphs import ps_matmul_step
from process_checks import stop_process

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def dashboards():
    """`make(cluster, **kw) -> ClusterDashboard`; every one is closed at teardown."""
    made: list = []

    def make(cluster, **kwargs) -> ClusterDashboard:
        dashboard = ClusterDashboard(cluster, **kwargs)
        made.append(dashboard)
        return dashboard

    yield make
    for dashboard in made:
        dashboard.close()
        assert not dashboard.polling


def wait_for(predicate, timeout: float = 10.0, step: float = 0.01) -> float:
    """Seconds until `predicate()` held; fails the test after `timeout`."""
    start = time.monotonic()
    while not predicate():
        assert time.monotonic() - start < timeout, "condition not reached"
        time.sleep(step)
    return time.monotonic() - start


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match="'grpc://x:1'"):
        ClusterDashboard("grpc://x:1")
    with pytest.raises(ValueError, match="-1"):
        ClusterDashboard(object(), interval=-1)
    with pytest.raises(TypeError, match="'fast'"):
        ClusterDashboard(object(), interval="fast")


def test_every_task_is_up_with_its_pid_address_and_device_memory(local_cluster, dashboards):
    dashboard = dashboards(local_cluster)
    assert "nbcluster-dashboard" in dashboard._dom_classes
    host_memory = format_bytes(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    rows = {(r.job, r.index): r for r in dashboard.model.rows}
    assert sorted(rows) == [("ps", 0), ("worker", 0), ("worker", 1)]
    for (job, index), row in rows.items():
        assert row.state == "up"
        assert row.pid == str(local_cluster.pid(job, index))
        assert f"grpc://{row.address}" == local_cluster.target(job, index)
        # the task's own memory, not the host's (a CPU device's limit is the host's RAM)
        assert row.devices == "CPU:0" and row.memory and row.memory != host_memory
        assert row.cpu.endswith("%")
        assert (row.steps, row.sent, row.received) == ("0", "0 B", "0 B")
        assert (f'<tr class="nbc-task nbc-state-up" data-task="/job:{job}/task:{index}"'
                in dashboard.table_html)
    assert dashboard.polling


def test_a_step_raises_the_counters(local_cluster, dashboards):
    dashboard = dashboards(local_cluster, start=False)
    version = dashboard.model.version
    np.testing.assert_allclose(ps_matmul_step(local_cluster.target("worker", 0)), [[2, 3], [6, 11]])
    assert dashboard.refresh() is True and dashboard.model.version == version + 1
    statuses = {(s.job, s.index): s for s in local_cluster.status()}
    rows = {(r.job, r.index): r for r in dashboard.model.rows}
    ps, worker = statuses[("ps", 0)], statuses[("worker", 1)]
    assert ps.bytes_sent > 0 and worker.bytes_received > 0 and worker.steps_run >= 1
    assert rows[("ps", 0)].sent == format_bytes(ps.bytes_sent)
    assert rows[("worker", 1)].received == format_bytes(worker.bytes_received)
    assert rows[("worker", 1)].steps == str(worker.steps_run)
    assert format_bytes(ps.bytes_sent) in dashboard.table_html
    dashboard.refresh()  # no step since: the counters stand (CPU % may move)
    rows = {(r.job, r.index): r for r in dashboard.model.rows}
    assert rows[("ps", 0)].sent == format_bytes(ps.bytes_sent)
    assert rows[("worker", 1)].steps == str(worker.steps_run)


def test_a_killed_task_turns_red_within_2s_and_comes_back_up_after_restart(
        local_cluster, dashboards):
    dashboard = dashboards(local_cluster)  # the default interval: 0.5 s
    old_pid = local_cluster.pid("worker", 1)
    start = time.monotonic()
    local_cluster.kill("worker", 1)
    wait_for(lambda: dashboard.state("worker", 1) != "up")
    assert time.monotonic() - start < 2.0
    assert dashboard.state("worker", 1) == "failed"  # SIGKILL: a nonzero exit
    assert 'nbc-state-failed" data-task="/job:worker/task:1"' in dashboard.table_html
    assert "killed by SIGKILL" in dashboard.table_html
    assert dashboard.state("worker", 0) == "up"

    local_cluster.restart("worker", 1)
    new_pid = local_cluster.pid("worker", 1)
    wait_for(lambda: dashboard.state("worker", 1) == "up", timeout=5.0)
    row = next(r for r in dashboard.model.rows if (r.job, r.index) == ("worker", 1))
    assert row.pid == str(new_pid) != str(old_pid) and row.uptime == "<1m"
    assert 'nbc-state-up" data-task="/job:worker/task:1"' in dashboard.table_html


def test_a_task_that_stops_answering_is_down_within_2s_and_up_when_it_answers_again(
        local_cluster, dashboards):
    dashboard = dashboards(local_cluster)
    try:
        stop_process(local_cluster.pid("worker", 0))  # alive, but silent
        start = time.monotonic()
        wait_for(lambda: dashboard.state("worker", 0) != "up")
        assert time.monotonic() - start < 2.0
        assert dashboard.state("worker", 0) == "down"
        assert 'nbc-state-down" data-task="/job:worker/task:0"' in dashboard.table_html
    finally:
        local_cluster.kill("worker", 0, signal.SIGCONT)
    wait_for(lambda: dashboard.state("worker", 0) == "up", timeout=5.0)
    assert set(dashboard.states.values()) == {"up"}


def test_close_stops_the_thread_and_its_getstatus_calls(local_cluster, dashboards,
                                                       monkeypatch):
    calls: list = []
    status = local_cluster.status

    def counted(*args, **kwargs):
        calls.append(time.monotonic())
        return status(*args, **kwargs)
    monkeypatch.setattr(local_cluster, "status", counted)
    dashboard = dashboards(local_cluster, interval=0.05)
    wait_for(lambda: len(calls) >= 3)
    dashboard.close()
    assert not dashboard.polling
    seen = len(calls)
    time.sleep(0.3)
    assert len(calls) == seen


def test_stop_keeps_the_table_and_stops_polling(local_cluster, dashboards):
    dashboard = dashboards(local_cluster, interval=0.05)
    wait_for(lambda: dashboard.poller.polls >= 1)
    dashboard.stop()
    assert not dashboard.polling
    assert set(dashboard.states.values()) == {"up"}


def test_stopping_the_cluster_shows_every_task_stopped_and_ends_polling(
        cluster_factory, dashboards):
    cluster = cluster_factory({"worker": 2})
    dashboard = dashboards(cluster, interval=0.1)
    cluster.stop()
    wait_for(lambda: not dashboard.polling)
    assert dashboard.states == {"/job:worker/task:0": "stopped",
                                "/job:worker/task:1": "stopped"}
    assert "(stopped)" in dashboard.table_html
    assert dashboard.table_html.count("nbc-state-stopped") == 2


def test_the_log_tail_button_shows_the_chosen_task_log(local_cluster, dashboards):
    dashboard = dashboards(local_cluster, start=False)
    assert dashboard.log_html == ""
    dashboard._log_button.click()  # the selector starts at the first task
    assert "log of /job:ps/task:0" in dashboard.log_html
    assert "serving /job:ps/task:0" in dashboard.log_html
    dashboard._task.value = ("worker", 1)
    dashboard._log_button.click()
    assert "serving /job:worker/task:1" in dashboard.log_html
    assert "serving /job:ps/task:0" not in dashboard.log_html
    assert dashboard.show_log("worker", 0, lines=1).count("\n") == 0


def test_the_bundle_has_the_widget_and_both_fallbacks(local_cluster, dashboards):
    dashboard = dashboards(local_cluster, start=False)
    bundle = dashboard._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == dashboard.model_id
    assert bundle["text/html"].count('class="nbc-task nbc-state-up"') == 3
    text = bundle["text/plain"].splitlines()
    assert text[0] == f"Cluster {local_cluster.name!r}"
    assert [line.split()[0] for line in text[2:]] == [
        "/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1"]
