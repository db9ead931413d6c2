"""Scaffold: the ops that make a training session ready (init, readiness, saver), with defaults.

Rule: finalize() builds whatever the user left out, once, into the default
graph and then finalizes that graph, so session creators only run ops and
never add any (a recovered session runs exactly the graph the first one did).
The readiness report is a bool vector, one entry per variable; ready() turns
a fetched report into the names of the variables not yet initialized.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.framework.constant import constant
from nbcluster.framework.graph import get_default_graph
from nbcluster.ops.array import stack
from nbcluster.ops.state import (
    GLOBAL_VARIABLES,
    LOCAL_VARIABLES,
    is_variable_initialized,
    variables_initializer,
)
from nbcluster.ops.summary import merge_all
from nbcluster.training.saver import Saver

SUMMARY_OP = "summary_op"  # TF's GraphKeys.SUMMARY_OP


class ReadinessReport:
    """A bool tensor saying which of `variables` are initialized, and their names.

    Args:
      variables: the variables to check, in report order.
      name: the name of the report's op.
    Example:
      >>> report = ReadinessReport(tf.global_variables())
      >>> report.uninitialized(sess.run(report.op))
      ['hid_w', 'global_step']
    """

    def __init__(self, variables: list, name: str) -> None:
        self.names = [v.op.name for v in variables]
        if variables:
            self.op = stack([is_variable_initialized(v) for v in variables], name=name)
        else:
            self.op = constant(np.zeros([0], bool), dtypes.bool, name=name)

    def uninitialized(self, value) -> list:
        """The names of the variables the fetched report says are not initialized."""
        return reported_names(value, self.names)


def reported_names(value, names: Optional[list] = None) -> list:
    """What a fetched readiness report names: for a bool vector the entries of
    `names` (or "variable #i") that are False; a string vector (TF's
    report_uninitialized_variables, e.g. a user's own ready_op) is the names."""
    value = np.asarray(value).reshape(-1)
    if value.dtype == bool:
        return [names[i] if names else f"variable #{i}" for i, ok in enumerate(value) if not ok]
    return [v.decode() if isinstance(v, bytes) else str(v) for v in value]


def _default_summary_op(graph):
    found = graph.get_collection(SUMMARY_OP)
    if found:
        return found[0]
    op = merge_all()
    if op is not None:
        graph.add_to_collection(SUMMARY_OP, op)
    return op


class Scaffold:
    """The ops a MonitoredSession needs to create, initialize or restore, and check a model.

    Args:
      init_op: run by the chief when there is no checkpoint to restore
        (default: every global variable's initializer).
      init_feed_dict: feeds for init_op.
      init_fn: `init_fn(scaffold, session)`, called after init_op.
      ready_op: a tensor reporting what is not initialized: a bool vector (one
        entry per global and local variable: the default) or a string vector of
        names (TF's report); ready when it reports nothing.
      ready_for_local_init_op: the same report for what local_init_op needs
        (default: the global variables).
      local_init_op: run by every task once the global variables are ready
        (default: the local variables' initializers, or nothing without any).
      summary_op: what SummarySaverHook runs (default: the "summary_op"
        collection's first entry, else tf.summary.merge_all(), None without
        any summaries).
      saver: the Saver used to restore and save checkpoints (default: a sharded
        Saver of every global variable).
      copy_from_scaffold: take every argument not given from this Scaffold.
    Raises:
      TypeError: saver is not a Saver, init_fn not callable, or
        copy_from_scaffold not a Scaffold (the value is named).
    Example:
      >>> scaffold = Scaffold(init_fn=lambda scaffold, sess: warm_start(sess))
      >>> with MonitoredTrainingSession(scaffold=scaffold) as sess: ...
    """

    def __init__(self, init_op=None, init_feed_dict: Optional[dict] = None,
                 init_fn: Optional[Callable] = None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None,
                 saver: Optional[Saver] = None, copy_from_scaffold=None) -> None:
        given = dict(init_op=init_op, init_feed_dict=init_feed_dict, init_fn=init_fn,
                     ready_op=ready_op, ready_for_local_init_op=ready_for_local_init_op,
                     local_init_op=local_init_op, summary_op=summary_op, saver=saver)
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError(f"copy_from_scaffold is not a Scaffold: {copy_from_scaffold!r}")
            given = {k: getattr(copy_from_scaffold, "_user_init_fn" if k == "init_fn" else k)
                     if v is None else v for k, v in given.items()}
        if given["init_fn"] is not None and not callable(given["init_fn"]):
            raise TypeError(f"init_fn must be callable(scaffold, session), got "
                            f"{given['init_fn']!r}")
        if given["saver"] is not None and not isinstance(given["saver"], Saver):
            raise TypeError(f"saver must be a tf.train.Saver, got {given['saver']!r}")
        self._init_op, self._init_feed_dict = given["init_op"], given["init_feed_dict"]
        self._user_init_fn, self._ready_op = given["init_fn"], given["ready_op"]
        self._ready_for_local_init_op = given["ready_for_local_init_op"]
        self._local_init_op, self._summary_op = given["local_init_op"], given["summary_op"]
        self._saver = given["saver"]
        self._ready_report = self._local_report = None
        self._graph = None

    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)
    graph = property(lambda self: self._graph)

    @property
    def init_fn(self) -> Optional[Callable]:
        """`init_fn(session)`, the user's init_fn bound to this scaffold, or None."""
        if self._user_init_fn is None:
            return None
        return lambda session: self._user_init_fn(self, session)

    def finalize(self) -> "Scaffold":
        """Builds the missing ops into the default graph and finalizes that graph.

        Returns: self. Calling it again does nothing.
        """
        if self._graph is not None:
            return self
        graph = get_default_graph()
        global_vars = graph.get_collection(GLOBAL_VARIABLES)
        local_vars = graph.get_collection(LOCAL_VARIABLES)
        with graph.name_scope(None):
            if self._init_op is None:
                self._init_op = variables_initializer(global_vars, name="init")
            if self._ready_op is None:
                self._ready_report = ReadinessReport(global_vars + local_vars,
                                                     "report_uninitialized_variables")
                self._ready_op = self._ready_report.op
            if self._ready_for_local_init_op is None:
                self._local_report = ReadinessReport(global_vars,
                                                     "report_uninitialized_global_variables")
                self._ready_for_local_init_op = self._local_report.op
            if self._local_init_op is None and local_vars:
                self._local_init_op = variables_initializer(local_vars, name="init_local")
            if self._saver is None:
                self._saver = Saver(sharded=True, allow_empty=True)
            if self._summary_op is None:
                self._summary_op = _default_summary_op(graph)
        graph.finalize()
        self._graph = graph
        return self

    def uninitialized(self, value, for_local_init: bool = False) -> list:
        """The names a fetched ready_op (or ready_for_local_init_op) value reports."""
        report = self._local_report if for_local_init else self._ready_report
        return reported_names(value, report.names if report is not None else None)
