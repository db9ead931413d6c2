"""The Timeline widget: one traced step's ops per device, with Send/Recv arrows.

The widget is its synced traits (`_data`, the view's input; `window`, the
zoomed range) plus `static/timeline.js`; text/plain and text/html fallbacks
keep nbconvert and GitHub useful without a widget manager.
"""
from __future__ import annotations

import html
import os
import pathlib

import anywidget
import traitlets

from nbcluster.jupyter.widgets import STATIC, snapshot
from nbcluster.jupyter.widgets.chrome_trace import chrome_trace, write_chrome_trace
from nbcluster.jupyter.widgets.devices import color_of
from nbcluster.jupyter.widgets.timeline_model import StepTimeline, from_run_metadata
from nbcluster.jupyter.widgets.timeline_view import view_data
from nbcluster.jupyter.widgets.units import format_bytes, format_us


class Timeline(snapshot.Snapshotted, anywidget.AnyWidget):
    """One step's ops as bars in one lane per device, transfers as arrows;
    several runs' steps side by side.

    Waiting for a tensor from another device (a _Recv) is a hatched bar,
    apart from compute; bars that overlap in time get rows of their own, so
    labels never overlap.

    Wheel or drag-select zooms, double-click resets, hovering a bar shows the
    op. `window` is the zoomed range in µs ([] for the whole step) and may be
    set from Python too.

    Example:
      meta = tf.RunMetadata()
      sess.run(fetch, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
               run_metadata=meta)
      Timeline(meta)                      # in a cell
      Timeline([meta1, meta2])            # two runs side by side
      Timeline(meta).save_chrome_trace("step.json")  # for Perfetto
    """

    _esm = STATIC / "timeline.js"
    _data = traitlets.Dict().tag(sync=True)
    window = traitlets.List(traitlets.Float(), default_value=[]).tag(sync=True)

    def __init__(self, run_metadata, *more, **kwargs) -> None:
        """Builds the view of one traced step, or of several side by side.

        Args:
          run_metadata: a `tf.RunMetadata` from a run with
            `tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)`, or a list
            of them (one per `run` call); the partition graphs they carry
            pair Sends with Recvs by their attrs (by name when left out).
          *more: further RunMetadata, as if in the list.
          **kwargs: passed to the widget (layout, window).

        Raises:
          TypeError: run_metadata (or one in the list) is not a RunMetadata.
          ValueError: one has no step_stats (its step was not traced), or
            the list is empty.
        """
        metas = list(run_metadata) if isinstance(run_metadata, (list, tuple)) \
            else [run_metadata]
        metas += list(more)
        if not metas:
            raise ValueError("Timeline needs at least one RunMetadata, got an empty list")
        self._steps = [from_run_metadata(m) for m in metas]
        super().__init__(_data=view_data(self._steps), **kwargs)

    @traitlets.validate("window")
    def _check_window(self, proposal):
        window = proposal["value"]
        if window and (len(window) != 2 or not window[0] < window[1]):
            raise traitlets.TraitError(
                f"window must be [] or [start_us, end_us] with start < end, got {window!r}")
        return window

    @property
    def step(self) -> StepTimeline:
        """The data model of the first run (the only one, usually)."""
        return self._steps[0]

    @property
    def steps(self) -> list:
        """The data model of every run, in order."""
        return list(self._steps)

    @property
    def lanes(self) -> list:
        """Device names, one per lane, job → task → device (every run's)."""
        return [lane["device"] for lane in self._data["lanes"]]

    @property
    def ops(self) -> list:
        """[{device, name, op, start_us, end_us, run}], µs from its run's first start."""
        return [{"device": b.device, "name": b.name, "op": b.op,
                 "start_us": b.start_us, "end_us": b.end_us, "run": r}
                for r, step in enumerate(self._steps) for b in step.ops]

    @property
    def transfers(self) -> list:
        """[{src_device, dst_device, tensor, bytes, start_us, end_us, run}] (send start →
        recv end)."""
        return [{"src_device": t.src_device, "dst_device": t.dst_device, "tensor": t.tensor,
                 "bytes": t.bytes, "start_us": t.start_us, "end_us": t.end_us, "run": r}
                for r, step in enumerate(self._steps) for t in step.transfers]

    @property
    def duration_us(self) -> float:
        """From the first op's start to the last op's end, summed over the runs."""
        return sum(step.duration_us for step in self._steps)

    def chrome_trace(self, run: int = 0) -> dict:
        """Run `run`'s step in the Chrome trace event format, as a dict (chrome_trace.py)."""
        return chrome_trace(self._run(run))

    def save_chrome_trace(self, path: str | os.PathLike, run: int = 0) -> pathlib.Path:
        """Writes run `run`'s Chrome trace JSON (open it in Perfetto or chrome://tracing).

        Args:
          path: the file to write, str or path-like.
          run: which run (0 for the first).

        Returns:
          the path written.

        Raises:
          TypeError: path is neither str nor path-like.
          IndexError: there is no run `run`.
        """
        return write_chrome_trace(self._run(run), path)

    def _run(self, run: int) -> StepTimeline:
        if isinstance(run, bool) or not isinstance(run, int) or not 0 <= run < len(self._steps):
            raise IndexError(f"run must be 0 to {len(self._steps) - 1}, got {run!r}")
        return self._steps[run]

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        data = dict(data, **{"text/plain": "\n".join(summary(s) for s in self._steps),
                             "text/html": "".join(static_html(s) for s in self._steps)})
        return data, metadata


def summary(step: StepTimeline) -> str:
    """One line: "Timeline: 14 ops on 3 devices over 8.1 ms; 2 transfers (40 B)"."""
    nbytes = sum(t.bytes for t in step.transfers)
    return (f"Timeline: {len(step.ops)} ops on {len(step.lanes)} devices over "
            f"{format_us(step.duration_us)}; {len(step.transfers)} transfers "
            f"({format_bytes(nbytes)})")


def busy_us(step: StepTimeline, device: str) -> float:
    """Time the device ran at least one op (overlapping bars counted once)."""
    total, reach = 0.0, float("-inf")
    for bar in sorted((b for b in step.ops if b.device == device), key=lambda b: b.start_us):
        start = max(bar.start_us, reach)
        if bar.end_us > start:
            total += bar.end_us - start
        reach = max(reach, bar.end_us)
    return total


def static_html(step: StepTimeline) -> str:
    """A per-device table (ops, busy time, first/last op) and a static SVG of the bars."""
    rows = []
    for device in step.lanes:
        bars = [b for b in step.ops if b.device == device]
        first = min(bars, key=lambda b: b.start_us)
        last = max(bars, key=lambda b: b.end_us)
        rows.append(
            f"<tr><td><span style='color:{color_of(device, list(step.lanes))}'>&#9632;</span> "
            f"<code>{html.escape(device)}</code></td><td>{len(bars)}</td>"
            f"<td>{format_us(busy_us(step, device))}</td>"
            f"<td><code>{html.escape(first.name)}</code></td>"
            f"<td><code>{html.escape(last.name)}</code></td></tr>")
    return (f"<div class='nbcluster-timeline-static'><p>{html.escape(summary(step))}</p>"
            "<table><thead><tr><th>device</th><th>ops</th><th>busy</th>"
            "<th>first op</th><th>last op</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>" + _static_svg(step) + "</div>")


def _static_svg(step: StepTimeline, width: int = 640, lane_h: int = 18) -> str:
    scale = width / max(step.duration_us, 1.0)
    known = list(step.lanes)
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' "
             f"height='{lane_h * len(known) + 2}' role='img'>"]
    for bar in step.ops:
        y = known.index(bar.device) * lane_h + 2
        w = max((bar.end_us - bar.start_us) * scale, 1.0)
        parts.append(f"<rect x='{bar.start_us * scale:.1f}' y='{y}' width='{w:.1f}' "
                     f"height='{lane_h - 4}' fill='{color_of(bar.device, known)}'>"
                     f"<title>{html.escape(bar.name)} ({html.escape(bar.op)})</title></rect>")
    return "".join(parts) + "</svg>"
