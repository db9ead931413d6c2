"""How a Cluster displays in IPython: as its live ClusterDashboard (one per cluster).

`register(shell)` adds a display function for `nbcluster.launch.cluster.Cluster`
by name (IPython's `ipython_display_formatter`), so registering imports neither
the launcher nor ipywidgets. It displays the dashboard under a display id of its
own: the widget view plus its text/html and text/plain, replaced by a static
snapshot when the dashboard closes or the kernel stops. Where ipywidgets is
missing, Cluster's `_repr_html_` and `__repr__` are shown as before.
"""
from __future__ import annotations

import sys
import threading

CLUSTER_MODULE, CLUSTER_CLASS = "nbcluster.launch.cluster", "Cluster"

_dashboards: dict = {}  # id(cluster) -> its ClusterDashboard (which holds the cluster)
_lock = threading.Lock()


def dashboard_for(cluster):
    """The cluster's dashboard: the one shown before while it is open, else a new one.

    Args:
      cluster: a `nbcluster.launch.Cluster`.
    Returns:
      A ClusterDashboard; displaying a cluster again does not start another poller.
    Raises:
      TypeError: `cluster` is not a Cluster.
    """
    from nbcluster.jupyter.widgets.dashboard import ClusterDashboard
    with _lock:
        for key in [k for k, d in _dashboards.items() if d._closed]:
            del _dashboards[key]  # closed by the user: let it and its cluster go
        cached = _dashboards.get(id(cluster))
        if cached is not None and cached.cluster is cluster and not cached._closed:
            return cached
        dashboard = _dashboards[id(cluster)] = ClusterDashboard(cluster)
        return dashboard


def _show_cluster(cluster) -> None:
    try:
        import ipywidgets  # noqa: F401 - without it, Cluster's own reprs are shown
    except ImportError:
        from IPython.display import display
        display({"text/plain": repr(cluster), "text/html": cluster._repr_html_()}, raw=True)
        return
    dashboard_for(cluster)._ipython_display_()


def register(ipython) -> None:
    """Makes every `Cluster` display as its ClusterDashboard in `ipython`.

    Args:
      ipython: an InteractiveShell (a kernel's, or a plain one).
    Raises:
      TypeError: `ipython` has no display formatter.
    """
    formatter = getattr(getattr(ipython, "display_formatter", None),
                        "ipython_display_formatter", None)
    if formatter is None:
        raise TypeError(f"register needs an IPython shell, not {type(ipython).__name__}")
    formatter.for_type_by_name(CLUSTER_MODULE, CLUSTER_CLASS, _show_cluster)


def unregister(ipython) -> None:
    """Undoes `register` on `ipython` and closes every cached dashboard."""
    formatter = ipython.display_formatter.ipython_display_formatter
    formatter.pop(f"{CLUSTER_MODULE}.{CLUSTER_CLASS}", None)
    close_all()


def close_all() -> None:
    """Closes every dashboard this module made (their pollers stop)."""
    with _lock:
        dashboards = list(_dashboards.values())
        _dashboards.clear()
    for dashboard in dashboards:
        dashboard.close()


def register_current() -> bool:
    """Registers in the running kernel, if any, without importing IPython.

    For `import nbcluster` inside a kernel. Returns:
      True if a kernel's shell was found and registered.
    """
    ipython_module = sys.modules.get("IPython")
    if ipython_module is None:
        return False
    shell = ipython_module.get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return False
    register(shell)
    return True
