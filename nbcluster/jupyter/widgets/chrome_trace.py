"""A StepTimeline in the Chrome trace event format (Perfetto, chrome://tracing).

Layout: one process per device (named, sorted as the lanes are), one thread
per executor thread, an "X" (complete) event per op and an "s"/"f" flow pair
per transfer. Timestamps are µs from the step's first start; the wall-clock
origin is kept in "otherData".
"""
from __future__ import annotations

import json
import os
import pathlib

from nbcluster.jupyter.widgets.timeline_model import OpBar, StepTimeline


def chrome_trace(timeline: StepTimeline) -> dict:
    """Builds the trace as a JSON-ready dict.

    Args:
      timeline: the step, from `timeline_model.from_run_metadata`.

    Returns:
      {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}.
    """
    pids = {device: i + 1 for i, device in enumerate(timeline.lanes)}
    events = []
    for device, pid in pids.items():
        events.append(_meta("process_name", pid, 0, {"name": device}))
        events.append(_meta("process_sort_index", pid, 0, {"sort_index": pid}))
        names = timeline.thread_names.get(device, {})
        for tid in sorted({b.thread_id for b in timeline.ops if b.device == device}):
            events.append(_meta("thread_name", pid, tid, {"name": names.get(tid, f"thread {tid}")}))
    events.extend(_complete(bar, pids[bar.device]) for bar in timeline.ops)
    for flow_id, transfer in enumerate(timeline.transfers, start=1):
        common = {"name": f"transfer {transfer.tensor}", "cat": "transfer", "id": flow_id,
                  "bp": "e", "args": {"tensor": transfer.tensor, "bytes": transfer.bytes,
                                      "from": transfer.src_device, "to": transfer.dst_device}}
        events.append(dict(common, ph="s", ts=_inside(transfer.send),
                           pid=pids[transfer.src_device], tid=transfer.send.thread_id))
        events.append(dict(common, ph="f", ts=_inside(transfer.recv),
                           pid=pids[transfer.dst_device], tid=transfer.recv.thread_id))
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"origin_unix_us": timeline.origin_us,
                          "duration_us": timeline.duration_us,
                          "transfers": len(timeline.transfers)}}


def write_chrome_trace(timeline: StepTimeline, path: str | os.PathLike) -> pathlib.Path:
    """Writes `chrome_trace(timeline)` as JSON.

    Args:
      timeline: the step.
      path: the file to write (str or path-like); its folder must exist.

    Returns:
      the path written, as a pathlib.Path.

    Raises:
      TypeError: path is not a str or path-like.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}: {path!r}")
    path = pathlib.Path(path)
    path.write_text(json.dumps(chrome_trace(timeline)))
    return path


def _meta(name: str, pid: int, tid: int, args: dict) -> dict:
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": args}


def _complete(bar: OpBar, pid: int) -> dict:
    outputs = [{"dtype": o.dtype, "shape": list(o.shape), "bytes": o.bytes} for o in bar.outputs]
    return {"name": bar.name, "cat": bar.op or "op", "ph": "X", "pid": pid,
            "tid": bar.thread_id, "ts": bar.start_us, "dur": bar.end_us - bar.start_us,
            "args": {"op": bar.op, "device": bar.device, "inputs": list(bar.inputs),
                     "outputs": outputs}}


def _inside(bar: OpBar) -> float:
    # "bp": "e" binds a flow event to the slice enclosing its ts; the middle
    # of the op's slice is enclosed even when the slice is 0 µs long.
    return bar.start_us + (bar.end_us - bar.start_us) / 2
