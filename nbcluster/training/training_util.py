"""The global step: one int64 scalar variable per graph, found by its collection."""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.graph import Graph, get_default_graph
from nbcluster.ops.state import GLOBAL_VARIABLES, Variable

GLOBAL_STEP = "global_step"  # both the collection key and the variable's name


def get_global_step(graph: Optional[Graph] = None) -> Optional[Variable]:
    """The graph's global step variable, or None when it has none.

    Args:
      graph: the graph to look in (default: the default graph).
    Returns: the Variable in the "global_step" collection, else None.
    Raises:
      TypeError: the collection holds more than one item, or the one item is
        not an integer scalar variable.
    """
    graph = graph or get_default_graph()
    found = graph.get_collection(GLOBAL_STEP)
    if not found:
        return None
    if len(found) > 1:
        raise TypeError(f"Multiple tensors in global_step collection: {found}")
    step = found[0]
    if not step.dtype.is_integer:
        raise TypeError(f"Existing \"global_step\" does not have integer type: {step.dtype}")
    if step.shape.rank not in (None, 0):
        raise TypeError(f"Existing \"global_step\" is not scalar: {step.shape}")
    return step


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
