"""The global step: one int64 scalar variable per graph, found by its collection."""
from __future__ import annotations

import logging
from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.graph import Graph, get_default_graph
from nbcluster.ops.state import GLOBAL_VARIABLES, Variable

GLOBAL_STEP = "global_step"  # both the collection key and the variable's name


def get_global_step(graph: Optional[Graph] = None) -> Optional[Variable]:
    """The graph's global step variable, or None when it has none.

    As TF: the one item of the "global_step" collection, else whatever is named
    "global_step:0" (a variable made with that name but not put in the
    collection); two or more items in the collection log an error and give None.

    Args:
      graph: the graph to look in (default: the default graph).
    Returns: the Variable (or tensor) found, else None.
    Raises:
      TypeError: what was found is not an integer scalar.
    """
    graph = graph or get_default_graph()
    found = graph.get_collection(GLOBAL_STEP)
    if len(found) > 1:
        logging.getLogger(__name__).error("Multiple tensors in global_step collection.")
        return None
    step = found[0] if found else _named_global_step(graph)
    if step is None:
        return None
    if not step.dtype.is_integer:
        raise TypeError(f"Existing \"global_step\" does not have integer type: {step.dtype}")
    if step.shape.rank not in (None, 0):
        raise TypeError(f"Existing \"global_step\" is not scalar: {step.shape}")
    return step


def _named_global_step(graph: Graph):
    # The Variable itself where there is one (hooks assign to it), else the tensor.
    for v in graph.get_collection(GLOBAL_VARIABLES):
        if getattr(v, "name", None) == f"{GLOBAL_STEP}:0":
            return v
    try:
        return graph.get_tensor_by_name(f"{GLOBAL_STEP}:0")
    except (KeyError, ValueError):
        return None


def create_global_step(graph: Optional[Graph] = None) -> Variable:
    """Creates the global step: int64, 0 at start, not trainable.

    Built outside any name scope and control block, as TF does; the device
    scope (e.g. a replica_device_setter) still applies, so it lands on a ps.

    Args:
      graph: the graph to build in (default: the default graph).
    Returns: the new Variable, named "global_step".
    Raises:
      ValueError: the graph already has a global step.
    """
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError("\"global_step\" already exists.")
    with graph.as_default(), graph.name_scope(None), graph.control_dependencies(None):
        from nbcluster.ops.fill import zeros
        return Variable(lambda: zeros([], dtype=dtypes.int64), trainable=False,
                        collections=[GLOBAL_VARIABLES, GLOBAL_STEP], name=GLOBAL_STEP)


def get_or_create_global_step(graph: Optional[Graph] = None) -> Variable:
    """The graph's global step, created first if it has none (tf.train's).

    Example:
      >>> step = get_or_create_global_step()
      >>> step is get_or_create_global_step(), step.name
      (True, 'global_step:0')
    """
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    return step if step is not None else create_global_step(graph)


def global_step(sess, global_step_tensor) -> int:
    """The global step's value as a Python int (tf.train.global_step).

    Args:
      sess: a Session (anything with `run`).
      global_step_tensor: the global step Variable or tensor.
    Returns: its current value.
    """
    return int(sess.run(global_step_tensor))
