"""The Jupyter layer: `%load_ext nbcluster.jupyter` (or `nbcluster`) adds the %tfserver magics;
`from nbcluster.jupyter import PlacementView, Timeline, ClusterDashboard, ClusterBuilder`
gives the widgets.

Everything the magics start is stopped when the extension is unloaded or the
kernel exits (atexit); task processes also end by themselves once the kernel
process is gone (`python -m nbcluster.server --exit-with-parent`).
"""
from __future__ import annotations

import atexit
import importlib

__all__ = ["load_ipython_extension", "unload_ipython_extension",
           "ClusterBuilder", "ClusterDashboard", "PlacementView", "Timeline"]

_MAGICS = "TfServerMagics"  # the class name IPython's magics registry keys it by


def __getattr__(name: str):
    """The widgets, loaded on first use (nbcluster.jupyter.widgets)."""
    # not `from nbcluster.jupyter import widgets`: that asks this hook for "widgets"
    widgets = importlib.import_module("nbcluster.jupyter.widgets")
    if name in widgets.__all__:
        return getattr(widgets, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_ipython_extension(ipython) -> None:
    """Registers the %tfserver magics on `ipython` (once per shell).

    Args:
      ipython: the InteractiveShell (IPython passes it to `%load_ext`).
    """
    from nbcluster.jupyter.display import register
    from nbcluster.jupyter.magics import TfServerMagics  # IPython and launch/ load only here
    register(ipython)
    if _MAGICS in ipython.magics_manager.registry:
        return
    magics = TfServerMagics(ipython)
    ipython.register_magics(magics)
    atexit.register(magics.registry.stop_all)
    _show_op_errors(ipython, magics)


def _show_op_errors(ipython, magics) -> None:
    """An OpError in a cell shows the user's frames, then which task died and the fix
    (`failures.py`); a handler someone else set is left alone (IPython keeps one)."""
    from nbcluster import errors
    from nbcluster.jupyter.failures import op_error_handler
    if ipython.custom_exceptions:
        return
    ipython.set_custom_exc((errors.OpError,), op_error_handler(magics.registry.entries))
    magics.shows_op_errors = True


def unload_ipython_extension(ipython) -> None:
    """Stops everything the magics started and removes %tfserver from `ipython`.

    Args:
      ipython: the InteractiveShell (IPython passes it to `%unload_ext`).
    """
    from nbcluster.jupyter.display import unregister
    unregister(ipython)
    magics = ipython.magics_manager.registry.pop(_MAGICS, None)
    if magics is None:
        return
    for kind in ("line", "cell"):
        ipython.magics_manager.magics[kind].pop("tfserver", None)
    atexit.unregister(magics.registry.stop_all)
    if getattr(magics, "shows_op_errors", False):
        ipython.set_custom_exc((), None)
    magics.registry.stop_all()


def _jupyter_server_extension_points() -> list:
    """Where jupyter-server finds nbcluster's server extension (GET /nbcluster/clusters).

    Returns:
      [{"module": "nbcluster.jupyter.server_extension"}]: the module whose
      `_load_jupyter_server_extension` adds the handler.
    """
    return [{"module": "nbcluster.jupyter.server_extension"}]


def register_display_in_kernel() -> bool:
    """Inside a running kernel, makes a `Cluster` display as its live dashboard.

    Returns:
      True if a kernel was found and the display registered.
    """
    from nbcluster.jupyter.display import register_current
    return register_current()
