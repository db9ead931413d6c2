"""Notebook widgets: the cluster builder and dashboard, the placement graph, the step timeline.

Names load lazily, so `%load_ext nbcluster` does not pay for ipywidgets/anywidget.
"""
from __future__ import annotations

import importlib
import pathlib

__all__ = ["ClusterBuilder", "ClusterDashboard", "PlacementView", "Timeline"]

STATIC = pathlib.Path(__file__).parent / "static"  # esbuild's output (labextension/)

_HOMES = {"ClusterBuilder": "builder", "ClusterDashboard": "dashboard",
          "PlacementView": "placement", "Timeline": "timeline"}


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + __all__)
