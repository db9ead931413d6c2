"""GradientTape for graph-building code: records which ops were built under it, and
builds their backward graph with `gradients` when asked.

Rule: the tape never runs anything. It remembers the graph-op index ranges built
while it recorded; a source is differentiable when it is a Variable (watched
or, by default, any), a watched tensor, or a tensor built while recording.
Ops built under `stop_recording()` are walls for the gradient.
"""
from __future__ import annotations

import contextlib
from typing import Optional

from nbcluster.framework.graph import get_default_graph, graph_of
from nbcluster.framework.operation import Tensor, as_tensor_or_op
from nbcluster.grad.gradients import gradients


class GradientTape:
    """Records graph ops so `gradient(target, sources)` can differentiate them.

    Args:
      persistent: allow more than one `gradient()` call.
      watch_accessed_variables: differentiate with respect to any Variable;
        when False, only with respect to watched ones.

    Example:
      >>> x = constant(3.0)
      >>> with GradientTape() as tape:
      ...     tape.watch(x)
      ...     y = x * x
      >>> dy_dx = tape.gradient(y, x)     # evaluates to 6.0
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._persistent = bool(persistent)
        self._watch_variables = bool(watch_accessed_variables)
        self._graph = None
        self._recorded: list = []      # [start, end) op-index ranges
        self._paused: list = []        # ranges built under stop_recording
        self._open: Optional[int] = None
        self._watched: dict = {}       # id -> Tensor or Variable
        self._used = False

    # -- recording -----------------------------------------------------------
    def __enter__(self) -> "GradientTape":
        if self._open is not None:
            raise ValueError("Tape is still recording, This can happen if you try to "
                             "re-enter an already-active tape.")
        self._graph = get_default_graph()
        self._open = self._graph.version
        return self

    def __exit__(self, *exc) -> None:
        self._close()

    def _close(self) -> None:
        if self._open is not None:
            self._recorded.append((self._open, self._graph.version))
            self._open = None

    @contextlib.contextmanager
    def stop_recording(self):
        """Ops built inside are not recorded: no gradient flows through them.

        Raises: RuntimeError when the tape is not recording.
        """
        if self._open is None:
            raise RuntimeError("Cannot stop recording: the tape is not currently recording.")
        self._close()
        start = self._graph.version
        try:
            yield
        finally:
            self._paused.append((start, self._graph.version))
            self._open = self._graph.version

    def reset(self) -> None:
        """Forgets every recorded op and watched value (recording goes on if it was)."""
        recording = self._open is not None
        self._recorded, self._paused, self._watched = [], [], {}
        self._open = self._graph.version if recording else None
        self._used = False

    def watch(self, tensor) -> None:
        """Marks a Tensor or Variable (or a nested structure of them) as a source.

        Raises: ValueError for anything that is neither a Tensor nor a Variable.
        """
        for value in _flatten(tensor):
            if not isinstance(as_tensor_or_op(value), Tensor):
                raise ValueError(f"Passed in object {value!r} of type "
                                 f"'{type(value).__name__}', not tf.Tensor or tf.Variable.")
            self._watched[id(value)] = value

    def watched_variables(self) -> tuple:
        return tuple(v for v in self._watched.values() if not isinstance(v, Tensor))

    # -- differentiating ---------------------------------------------------------
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients: str = "none"):
        """d(target)/d(source) for each source, in the structure of `sources`.

        Args:
          target: a Tensor, or a (nested) list of Tensors, whose sum is differentiated.
          sources: a Tensor or Variable, or a nested structure (lists, tuples,
            dicts) of them.
          output_gradients: None, or upstream gradients in target's structure.
          unconnected_gradients: "none" (None for an unconnected source) or "zero".
        Returns: gradients in the structure of `sources`.
        Raises:
          RuntimeError: a non-persistent tape was already used once.
          ValueError: an unknown `unconnected_gradients`.
        """
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute "
                               "one set of gradients (or jacobians)")
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(f"Unknown value for unconnected_gradients: "
                             f"{unconnected_gradients!r}")
        self._used = True
        targets = _flatten(target)
        flat_sources = _flatten(sources)
        graph = self._graph or graph_of(targets)
        paused = self._paused_outputs(graph)
        wanted = [s for s in flat_sources if self._is_source(s)]
        grad_ys = None if output_gradients is None else _flatten(output_gradients)
        # Inside the `with` block the gradient ops are recorded too (as TF does),
        # so a persistent tape can differentiate them again.
        with graph.as_default():
            found = gradients(targets, wanted, grad_ys=grad_ys,
                              stop_gradients=paused or None) if wanted else []
            by_id = {id(s): g for s, g in zip(wanted, found)}
            flat = [by_id.get(id(s)) for s in flat_sources]
            if unconnected_gradients == "zero":
                from nbcluster.ops.fill import zeros_like
                flat = [zeros_like(as_tensor_or_op(s)) if g is None else g
                        for s, g in zip(flat_sources, flat)]
        return _pack(sources, iter(flat))

    def _is_source(self, source) -> bool:
        if id(source) in self._watched:
            return True
        if not isinstance(source, Tensor):
            return self._watch_variables
        return any(start <= source.op._id < end for start, end in self._all_recorded())

    def _all_recorded(self) -> list:
        ranges = list(self._recorded)
        if self._open is not None:
            ranges.append((self._open, self._graph.version))
        return ranges

    def _paused_outputs(self, graph) -> list:
        ops = graph.get_operations()
        return [t for start, end in self._paused for op in ops[start:end] for t in op.outputs]


def _flatten(structure) -> list:
    if isinstance(structure, dict):
        return [v for k in sorted(structure) for v in _flatten(structure[k])]
    if isinstance(structure, (list, tuple)):
        return [v for item in structure for v in _flatten(item)]
    return [structure]


def _pack(structure, values):
    if isinstance(structure, dict):
        return {k: _pack(structure[k], values) for k in sorted(structure)}
    if isinstance(structure, (list, tuple)):
        items = [_pack(item, values) for item in structure]
        if hasattr(structure, "_fields"):  # a namedtuple
            return type(structure)(*items)
        return type(structure)(items)
    return next(values)
