"""PlacementView: the dataflow graph of a step, ops coloured and boxed by job → task → device.

The widget is its synced traits (`view`, `expanded`, `rankdir`) plus the
browser view in `labextension/src/placement.js` (dagre lays it out). Python
computes everything the view shows (`placement_model`, `placement_metadata`,
`placement_scopes`); clicking a scope in the browser edits `expanded`, and
`view` is recomputed here.
"""
from __future__ import annotations

import html
from collections import Counter

import anywidget
import traitlets

import nbcluster as tf
from nbcluster.jupyter.widgets import STATIC, snapshot
from nbcluster.jupyter.widgets.placement_metadata import from_run_metadata
from nbcluster.jupyter.widgets.placement_model import (
    CLIENT,
    Placement,
    fetch_names,
    from_graph,
    prune,
)
from nbcluster.jupyter.widgets.placement_scopes import DEFAULT_BUDGET, DEFAULT_THRESHOLD, view_data
from nbcluster.jupyter.widgets.units import format_bytes

RANKDIRS = ("TB", "LR", "BT", "RL")
COLOR_BY = ("device", "time")
_HTML_ROWS = 50  # transfers listed in the static fallback


class PlacementView(snapshot.Snapshotted, anywidget.AnyWidget):
    """The ops of a graph or a traced step, grouped by job → task → device.

    Args:
      graph: a tf.Graph; alone, it shows the requested placement (each op's
        `device` as `tf.device` set it; unplaced ops are grey).
      run_metadata: a tf.RunMetadata from a step run with
        `tf.RunOptions(trace_level=FULL_TRACE, output_partition_graphs=True)`:
        shows the actual placement, op times and the tensors sent between
        devices (with `graph` too, its dtypes and shapes fill gaps).
      fetches: a tensor, op, name or list of them: show only what they need.
      expanded: name scopes to show open.
      rankdir: "TB" (top to bottom) or "LR", "BT", "RL".
      threshold: a name scope with more ops than this (on one device) is
        drawn folded, as one node; numbered sibling scopes (layer_0 …
        layer_41) fold into one node while a level is crowded.
      color_by: "device", or "time" (each op's measured time, from a traced
        run_metadata's step stats); the view's menu switches it too.

    Raises:
      TypeError: neither graph nor run_metadata, or one of the wrong type.
      ValueError: a fetch that is not in the view, a bad rankdir or color_by, or a
        RunMetadata without partition graphs.

    Example:
      >>> view = PlacementView(graph=tf.get_default_graph(), fetches=loss)
      >>> view.devices
      ['/job:ps/task:0', '/job:worker/task:0']
    """

    _esm = STATIC / "placement.js"
    view = traitlets.Dict().tag(sync=True)
    expanded = traitlets.List(traitlets.Unicode()).tag(sync=True)
    rankdir = traitlets.Unicode("TB").tag(sync=True)
    # The browser lowers `budget` (nodes per level before smaller scopes fold)
    # until the first drawing fits its frame with readable text.
    budget = traitlets.Int(DEFAULT_BUDGET).tag(sync=True)
    color_by = traitlets.Unicode("device").tag(sync=True)  # or "time" (from step stats)

    def __init__(self, graph=None, run_metadata=None, fetches=None, *, expanded=(),
                 rankdir: str = "TB", threshold: int = DEFAULT_THRESHOLD,
                 color_by: str = "device", **kwargs) -> None:
        self._placement = _placement_of(graph, run_metadata, fetches)
        if rankdir not in RANKDIRS:
            raise ValueError(f"rankdir must be one of {RANKDIRS}, got {rankdir!r}")
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
            raise ValueError(f"threshold must be a positive int, got {threshold!r}")
        if color_by not in COLOR_BY:
            raise ValueError(f"color_by must be one of {COLOR_BY}, got {color_by!r}")
        self._threshold, self._ready = threshold, False
        super().__init__(expanded=list(expanded), rankdir=rankdir, color_by=color_by, **kwargs)
        self._ready = True
        self._refresh()

    @traitlets.validate("budget")
    def _check_budget(self, proposal):
        if proposal["value"] < 1:
            raise traitlets.TraitError(f"budget must be at least 1, got {proposal['value']!r}")
        return proposal["value"]

    @traitlets.validate("color_by")
    def _check_color_by(self, proposal):
        if proposal["value"] not in COLOR_BY:
            raise traitlets.TraitError(
                f"color_by must be one of {COLOR_BY}, got {proposal['value']!r}")
        return proposal["value"]

    @traitlets.observe("expanded", "budget")
    def _on_expanded(self, change) -> None:
        if self._ready:  # not while __init__ sets the first value
            self._refresh()

    def _refresh(self) -> None:
        self.view = view_data(self._placement, self.expanded, self._threshold, self.budget)

    # -- for users and tests ------------------------------------------------
    @property
    def placement(self) -> Placement:
        """The whole data model (every op, not only the drawn nodes)."""
        return self._placement

    @property
    def devices(self) -> list:
        """The sorted device names ops are placed on (not the client)."""
        return self._placement.devices

    @property
    def nodes(self) -> list:
        """Every op as a dict: name, op, device, dtype, shape, requested, start_us, time_us."""
        return [{"name": o.name, "op": o.op, "device": o.device, "dtype": o.dtype,
                 "shape": o.shape, "requested": o.requested, "start_us": o.start_us,
                 "time_us": o.time_us} for o in self._placement.ops.values()]

    @property
    def transfers(self) -> list:
        """[(src_node, dst_node, src_device, dst_device, bytes)], one per tensor
        sent (dst_node: its first consumer)."""
        return [(t.src_node, t.dst_nodes[0] if t.dst_nodes else "", t.src_device,
                 t.dst_device, t.bytes) for t in self._placement.transfers]

    def toggle(self, scope: str) -> None:
        """Opens a folded name scope, or folds an open one (what a click does)."""
        scope = scope.rstrip("/")
        self.expanded = [s for s in self.expanded if s != scope] if scope in self.expanded \
            else [*self.expanded, scope]

    # -- fallbacks ------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        data, meta = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        data = dict(data, **{"text/plain": self.summary(), "text/html": self.to_html()})
        return data, meta

    def summary(self) -> str:
        """One line: ops per device and the transfers, e.g. for text/plain."""
        counts = Counter(o.device for o in self._placement.ops.values() if o.device != CLIENT)
        per = ", ".join(f"{d or 'unplaced'}: {n}" for d, n in sorted(counts.items()))
        transfers = self._placement.transfers
        total = sum(t.bytes or 0 for t in transfers)
        kind = "actual" if self._placement.actual else "requested"
        return (f"PlacementView ({kind}): {sum(counts.values())} ops on "
                f"{len(self.devices)} devices{f' ({per})' if per else ''}; "
                f"{len(transfers)} cross-device transfers ({format_bytes(total)})")

    def to_html(self) -> str:
        """A static table of devices and transfers, for renderers without widgets."""
        legend = self.view.get("legend", [])
        rows = "".join(
            f"<tr><td><span style='display:inline-block;width:0.9em;height:0.9em;"
            f"background:{html.escape(e['color'])};border:1px solid #888'></span> "
            f"<code>{html.escape(e['device'])}</code></td><td>{e['ops']}</td></tr>"
            for e in legend)
        transfers = self._placement.transfers
        trows = "".join(
            f"<tr><td><code>{html.escape(t.tensor)}</code></td>"
            f"<td><code>{html.escape(t.src_device)}</code></td>"
            f"<td><code>{html.escape(t.dst_device)}</code></td>"
            f"<td>{html.escape(', '.join(t.dst_nodes))}</td>"
            f"<td>{format_bytes(t.bytes)}</td></tr>" for t in transfers[:_HTML_ROWS])
        more = (f"<p>… and {len(transfers) - _HTML_ROWS} more transfers</p>"
                if len(transfers) > _HTML_ROWS else "")
        return (f"<div class='nbcluster-placement-static'><p>{html.escape(self.summary())}</p>"
                f"<table><thead><tr><th>device</th><th>ops</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>"
                + (f"<table><thead><tr><th>tensor</th><th>from</th><th>to</th>"
                   f"<th>consumers</th><th>bytes</th></tr></thead><tbody>{trows}</tbody>"
                   f"</table>{more}" if transfers else "")
                + "</div>")


def _placement_of(graph, run_metadata, fetches) -> Placement:
    if graph is None and run_metadata is None:
        raise TypeError("PlacementView needs a graph (requested placement) or a "
                        "run_metadata (actual placement); got neither")
    if graph is not None and not isinstance(graph, tf.Graph):
        raise TypeError(f"graph must be a tf.Graph, got {type(graph).__name__}")
    if run_metadata is not None and not isinstance(run_metadata, tf.RunMetadata):
        raise TypeError(f"run_metadata must be a tf.RunMetadata, got "
                        f"{type(run_metadata).__name__}")
    placement = from_run_metadata(run_metadata, graph) if run_metadata is not None \
        else from_graph(graph)
    return prune(placement, fetch_names(fetches)) if fetches is not None else placement
