"""ClusterDashboard: the live state of every task of a Cluster, as plain ipywidgets.

A `StatusPoller` thread asks the tasks' GetStatus every `interval` seconds
and rewrites the one HTML table only when a shown cell changed; a task
selector and a button show the tail of a task's log. Polling ends at
`close()`, `stop()`, when the cluster is stopped, or at interpreter exit.
When it closes or the kernel stops, each of its displays is replaced by a
static snapshot of the table (`snapshot.py`).
"""
from __future__ import annotations

import html
import math
import threading

import ipywidgets as widgets

from nbcluster.jupyter.widgets import snapshot
from nbcluster.jupyter.widgets.dashboard_model import DashboardModel
from nbcluster.jupyter.widgets.status_poller import StatusPoller, observe
from nbcluster.launch import Cluster

POLL_TIMEOUT = 0.4  # seconds a GetStatus may take: a silent task turns red well within 2 s
LOG_LINES = 40


def _checked_interval(interval) -> float:
    if isinstance(interval, bool) or not isinstance(interval, (int, float)):
        raise TypeError(f"interval must be a number of seconds, not {interval!r}")
    if not math.isfinite(interval) or interval <= 0:
        raise ValueError(f"interval must be a positive number of seconds, not {interval!r}")
    return float(interval)


class ClusterDashboard(snapshot.Snapshotted, widgets.VBox):
    """Per task: state, address, pid, uptime, devices with memory, sessions, steps,
    bytes sent/received and last error; the log tail of a chosen task.

    Args:
      cluster: a `nbcluster.launch.Cluster`.
      interval: seconds between polls.
      start: start the background poller (False: only `refresh()` updates).
    Raises:
      TypeError: `cluster` is not a Cluster, or `interval` not a number.
      ValueError: `interval` is not positive.

    Example:
      >>> with Cluster.local(ps=1, worker=1) as cluster:      # doctest: +SKIP
      ...     dashboard = ClusterDashboard(cluster)
      ...     dashboard.state("worker", 0)
      'up'
    """

    def __init__(self, cluster, interval: float = 0.5, *, start: bool = True) -> None:
        interval = _checked_interval(interval)
        if not isinstance(cluster, Cluster):
            raise TypeError(f"ClusterDashboard needs a nbcluster.launch.Cluster, not "
                            f"{type(cluster).__name__} {repr(cluster)[:80]}")
        self.cluster = cluster
        self.model = DashboardModel(cluster.name)
        self._table = widgets.HTML()
        self._table.add_class("nbc-dashboard-status")
        keys = sorted(cluster.targets)
        self._task = widgets.Dropdown(
            options=[(f"/job:{job}/task:{index}", (job, index)) for job, index in keys],
            description="log of", layout=widgets.Layout(width="auto"))
        self._log_button = widgets.Button(description="Show log tail", icon="file-text-o")
        self._log_button.add_class("nbc-log-button")
        self._log_button.on_click(lambda _: self.show_log(*self._task.value))
        self._log = widgets.HTML()
        self._log.add_class("nbc-log")
        super().__init__([self._table, widgets.HBox([self._task, self._log_button]),
                          self._log])
        self.add_class("nbcluster-dashboard")
        self._closed = False
        # Held across a whole poll: a slower poll must not write an older table last.
        self._refreshing = threading.Lock()
        self.refresh()
        self._poller = StatusPoller(self._poll, interval, f"nbcluster-dashboard-{cluster.name}")
        if start and not self.model.stopped:
            self._poller.start()

    # -- polling ------------------------------------------------------------------
    def refresh(self) -> bool:
        """Polls every task once, now (on the calling thread); True if the table changed."""
        with self._refreshing:
            statuses, codes, stopped = observe(self.cluster, POLL_TIMEOUT)
            changed = self.model.update(statuses, codes, stopped)
            if changed and not self._closed:
                self._table.value = self.model.html()
        return changed

    def _poll(self) -> bool:
        if self._closed:
            return False
        self.refresh()
        return not self.model.stopped

    @property
    def polling(self) -> bool:
        """Whether the background thread is still polling."""
        return self._poller.alive

    @property
    def poller(self) -> StatusPoller:
        return self._poller

    def stop(self) -> None:
        """Stops polling (the table keeps its last state); idempotent."""
        self._poller.stop()

    def close(self) -> None:
        """Stops polling, leaves a static snapshot where it was shown, and closes the
        widget and its children."""
        if not getattr(self, "_closed", True):
            self.leave_snapshot(snapshot.CLOSED)  # before the children go
        self._closed = True
        # Widget.__del__ calls this too, also on an instance whose __init__ raised.
        poller = getattr(self, "_poller", None)
        if poller is not None:
            poller.stop()
        for name in ("_table", "_task", "_log_button", "_log"):
            child = getattr(self, name, None)
            if child is not None:
                child.close()
        for box in self.children:
            box.close()
        super().close()

    # -- queries ------------------------------------------------------------------
    def state(self, job: str, index: int) -> str:
        """The shown state of /job:`job`/task:`index` (ValueError if no such task)."""
        return self.model.state(job, index)

    @property
    def states(self) -> dict:
        """{"/job:worker/task:0": "up", ...} as shown now."""
        return {row.name: row.state for row in self.model.rows}

    @property
    def table_html(self) -> str:
        """The HTML the table widget shows."""
        return self._table.value

    @property
    def log_html(self) -> str:
        return self._log.value

    def show_log(self, job: str, index: int, lines: int = LOG_LINES) -> str:
        """Shows the last `lines` lines of the task's log under the table; returns them.

        Raises:
          ValueError: the cluster has no such task.
        """
        text = self.cluster.logs(job, index, tail=lines)
        name = f"/job:{job}/task:{index}"
        body = html.escape(text) if text else "(no log: the cluster did not start this " \
                                              "task, or it was stopped)"
        self._log.value = (f"<div><b>log of {html.escape(name)}</b> (last {lines} lines)"
                           f"<pre style='max-height:24em;overflow:auto;font-size:11px'>"
                           f"{body}</pre></div>")
        return text

    # -- display ------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs) or {}
        data["text/html"] = self.model.html()
        data["text/plain"] = self.model.text()
        return data

    def _display_marker(self) -> dict:
        # the table alone (not the log controls); "owns_tasks": its tasks end with the kernel
        return {"widget": "ClusterDashboard", "cluster": self.cluster.name,
                "freeze": ".nbc-dashboard-table", "owns_tasks": bool(self.cluster.pids)}

    def _snapshot_bundle(self, reason: str) -> dict:
        text = snapshot.note(reason)
        # at kernel exit, the tasks this kernel started end with it: none shows "up"
        ended = reason == snapshot.KERNEL_STOPPED and bool(self.cluster.pids)
        if ended:
            text += "; the tasks it started were stopped with it"
        rows = self.model.snapshot_rows(ended)
        return {"text/html": self.model.html(text, rows),
                "text/plain": self.model.text(text, rows)}

    def __repr__(self) -> str:
        return f"ClusterDashboard({self.cluster.name!r}, {len(self.model.rows)} tasks)"
