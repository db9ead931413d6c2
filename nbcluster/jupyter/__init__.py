"""The Jupyter layer: `%load_ext nbcluster.jupyter` (or `nbcluster`) adds the %tfserver magics.

Everything the magics start is stopped when the extension is unloaded or the
kernel exits (atexit); task processes also end by themselves once the kernel
process is gone (`python -m nbcluster.server --exit-with-parent`).
"""
from __future__ import annotations

import atexit

__all__ = ["load_ipython_extension", "unload_ipython_extension"]

_MAGICS = "TfServerMagics"  # the class name IPython's magics registry keys it by


def load_ipython_extension(ipython) -> None:
    """Registers the %tfserver magics on `ipython` (once per shell).

    Args:
      ipython: the InteractiveShell (IPython passes it to `%load_ext`).
    """
    from nbcluster.jupyter.magics import TfServerMagics  # IPython and launch/ load only here
    if _MAGICS in ipython.magics_manager.registry:
        return
    magics = TfServerMagics(ipython)
    ipython.register_magics(magics)
    atexit.register(magics.registry.stop_all)


def unload_ipython_extension(ipython) -> None:
    """Stops everything the magics started and removes %tfserver from `ipython`.

    Args:
      ipython: the InteractiveShell (IPython passes it to `%unload_ext`).
    """
    magics = ipython.magics_manager.registry.pop(_MAGICS, None)
    if magics is None:
        return
    for kind in ("line", "cell"):
        ipython.magics_manager.magics[kind].pop("tfserver", None)
    atexit.unregister(magics.registry.stop_all)
    magics.registry.stop_all()
