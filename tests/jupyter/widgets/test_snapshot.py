"""Jupyter tier: widgets never lie. A displayed widget leaves a static HTML snapshot in its
display when it closes or the kernel stops, and a dashboard with no task running says so."""
from __future__ import annotations

import html

import pytest
from IPython.display import display
from IPython.utils.capture import capture_output

import nbcluster as tf
from nbcluster.jupyter.widgets import ClusterBuilder, ClusterDashboard, PlacementView, snapshot

from process_checks import wait_gone

pytestmark = pytest.mark.timeout(120)

WIDGET = snapshot.WIDGET_VIEW


def _displayed(widget):
    with capture_output() as cap:
        display(widget)
    [shown] = cap.outputs
    return shown


def _closed(widget) -> list:
    with capture_output() as cap:
        widget.close()
    return cap.outputs


def test_a_closed_dashboard_leaves_its_last_table_in_its_display(ip, cluster_factory):
    cluster = cluster_factory({"worker": 2})
    dashboard = ClusterDashboard(cluster, start=False)
    shown = _displayed(dashboard)
    assert {WIDGET, "text/html", "text/plain"} <= set(shown.data)
    display_id = shown.transient["display_id"]
    assert dashboard.displays == [display_id]
    [update] = _closed(dashboard)
    assert update.update and update.transient["display_id"] == display_id
    assert WIDGET not in update.data  # nothing left that needs the widget's model
    page = update.data["text/html"]
    assert page.count('class="nbc-task nbc-state-up"') == 2  # it was closed, the tasks run
    assert "snapshot: closed at " in page and "no longer updated" in page
    assert "snapshot: closed at " in update.data["text/plain"]
    assert dashboard.displays == [] and _closed(dashboard) == []  # once


def test_at_kernel_exit_a_dashboard_shows_the_tasks_stopped_with_it(ip, cluster_factory):
    cluster = cluster_factory({"ps": 1, "worker": 1})
    dashboard = ClusterDashboard(cluster, start=False)
    shown = _displayed(dashboard)
    with capture_output() as cap:
        assert snapshot.snapshot_all(snapshot.KERNEL_STOPPED) >= 1
    [update] = [o for o in cap.outputs
                if o.transient["display_id"] == shown.transient["display_id"]]
    page = update.data["text/html"]
    assert "nbc-state-up" not in page and page.count('nbc-state-stopped') == 2
    assert "snapshot: kernel stopped at" in page
    assert "the tasks it started were stopped with it" in page
    assert "(no task running: 2 stopped)" in page
    dashboard.close()


def test_a_widget_never_displayed_leaves_nothing(ip, cluster_factory):
    dashboard = ClusterDashboard(cluster_factory({"worker": 1}), start=False)
    assert dashboard.displays == [] and _closed(dashboard) == []


def test_a_dashboard_whose_tasks_are_all_gone_says_so(ip, cluster_factory):
    cluster = cluster_factory({"worker": 2})
    dashboard = ClusterDashboard(cluster, start=False)
    pids = list(cluster.pids.values())
    cluster.kill("worker", 0)
    cluster.kill("worker", 1)
    assert wait_gone(pids) == []
    dashboard.refresh()
    assert dashboard.states == {"/job:worker/task:0": "failed", "/job:worker/task:1": "failed"}
    heading = f"Cluster {cluster.name!r} (no task running: 2 failed)"
    assert html.escape(heading) in dashboard.table_html
    assert dashboard.model.text().startswith(heading)
    assert "nbc-state-up" not in dashboard.table_html
    dashboard.close()


def test_every_widget_leaves_its_fallback_as_snapshot(ip):
    with tf.Graph().as_default() as graph:
        tf.constant(1.0, name="a") + 1.0
    builder = ClusterBuilder(name="snap")
    for widget in (PlacementView(graph), builder):
        shown = _displayed(widget)
        [update] = _closed(widget)
        assert update.transient["display_id"] == shown.transient["display_id"]
        assert WIDGET not in update.data and "snapshot: closed at" in update.data["text/html"]
        assert shown.data["text/html"] in update.data["text/html"] or widget is builder
    assert "%%tfserver cluster snap" in update.data["text/html"]  # the builder's design
