"""Which class a new `tf.Variable` is, ref or resource: the process-wide switch
(`enable_resource_variables`), the graphs a trace makes resource variables in, and
the slot ops/resource_variable.py registers ResourceVariable into.

Rule: `ops/state.py`'s Variable asks here and builds the registered class, so the
base class never imports its subclass (the package root imports both, so the
slot is filled before any program builds a variable).
"""
from __future__ import annotations

import threading
from typing import Optional

from nbcluster.framework.graph import get_default_graph

_default = {"use_resource": False}  # tf.compat.v1.enable_resource_variables(): process-wide
_forced = threading.local()  # graphs whose Variables are resource ones (a tf.function trace)


def enable_resource_variables() -> None:
    """Makes `tf.Variable` and `get_variable` build ResourceVariables by default."""
    _default["use_resource"] = True


def disable_resource_variables() -> None:
    """Makes them build ref variables again, unless asked for `use_resource=True`."""
    _default["use_resource"] = False


def resource_variables_enabled() -> bool:
    """Whether `tf.Variable` builds ResourceVariables by default."""
    return _default["use_resource"]


class resource_variables_in:  # a context manager, named as a function is
    """Within it, Variables made in `graph` on this thread are resource ones
    (TF2's tf.function makes only resource variables)."""

    def __init__(self, graph) -> None:
        self._graph = graph

    def __enter__(self):
        stack = getattr(_forced, "graphs", None)
        if stack is None:
            stack = _forced.graphs = []
        stack.append(self._graph)
        return self

    def __exit__(self, *exc) -> None:
        _forced.graphs.remove(self._graph)


def use_resource(flag: Optional[bool], graph=None) -> bool:
    """Whether a new variable is a resource one: `flag` if given, else the default."""
    if flag is not None:
        return bool(flag)
    graph = graph or get_default_graph()
    if any(g is graph for g in getattr(_forced, "graphs", ())):
        return True
    return _default["use_resource"]


_resource_kind: list = []  # [ResourceVariable], once ops/resource_variable.py is loaded


def register_resource_kind(cls: type) -> type:
    """Class decorator: `cls` is what a resource `tf.Variable` is built as."""
    if _resource_kind:
        raise KeyError(f"A resource variable class is already registered: {_resource_kind[0]}")
    _resource_kind.append(cls)
    return cls


def resource_kind() -> type:
    """The class of resource variables.

    Raises:
      RuntimeError: ops/resource_variable.py is not loaded (never, after `import nbcluster`).
    """
    if not _resource_kind:
        raise RuntimeError("no resource variable class: import nbcluster.ops.resource_variable")
    return _resource_kind[0]
