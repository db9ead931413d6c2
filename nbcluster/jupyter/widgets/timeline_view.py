"""The Timeline's browser input: one or several traced runs side by side, bars packed in rows.

Rule: pure functions of StepTimeline values; the result is plain JSON (the
widget's synced `_data`). Runs keep their own time origin and are placed one
after another with a small gap, so the same step run twice reads as two
blocks of the same shape. Within a lane, each executor thread gets its own
rows, and bars that overlap in time on one thread (a _Recv waiting while
ops run) get rows of their own: no bar, and so no label, covers another.
"""
from __future__ import annotations

from nbcluster.jupyter.widgets.devices import color_of
from nbcluster.jupyter.widgets.timeline_model import StepTimeline, lane_key
from nbcluster.jupyter.widgets.units import format_bytes, format_us

WAIT_OPS = ("_Recv", "_HostRecv", "RecvTensor")  # time spent waiting for a tensor to arrive
SEND_OPS = ("_Send", "_HostSend")
GAP_FRACTION = 0.04                 # between two runs, of the runs' total time


def bar_kind(op: str, name: str) -> str:
    """"wait" (for an input from another device), "send", or "compute"."""
    if op in WAIT_OPS or (not op and name.startswith("_recv_")):
        return "wait"
    if op in SEND_OPS or (not op and name.startswith("_send_")):
        return "send"
    return "compute"


def pack_rows(bars) -> tuple:
    """(row of each bar, rows used) for bars (start, end, thread): threads in
    order of first use get consecutive rows, and inside a thread a bar goes to
    the first of its rows free at its start (runs never overlap in time, so
    the runs of one thread share its rows)."""
    order = sorted(range(len(bars)), key=lambda i: (bars[i][0], bars[i][1]))
    threads: dict = {}   # thread -> [end of each of its rows]
    for i in order:
        threads.setdefault(bars[i][2], [])
    local = [0] * len(bars)
    for i in order:
        start, end, thread = bars[i]
        ends = threads[thread]
        at = next((r for r, e in enumerate(ends) if e <= start), None)
        if at is None:
            ends.append(end)
            at = len(ends) - 1
        else:
            ends[at] = end
        local[i] = at
    base, first = 0, {}
    for thread, ends in threads.items():
        first[thread] = base
        base += len(ends)
    return [first[thread] + local[i] for i, (_, _, thread) in enumerate(bars)], max(base, 1)


def view_data(steps) -> dict:
    """The JS view's input for one run or several.

    Args:
      steps: a StepTimeline, or a list of them (runs in order).

    Returns:
      {"lanes": [{device, color, rows}], "ops": [{lane, row, run, kind, name,
      op, start, end, outputs}], "transfers": [{src, dst, send, recv, tensor,
      bytes, start, end, run}], "runs": [{label, start, end}], "duration": µs};
      times are µs on the shared axis, "send"/"recv" index "ops".
    """
    steps = [steps] if isinstance(steps, StepTimeline) else list(steps)
    devices = sorted({d for s in steps for d in s.lanes}, key=lane_key)
    lane_of = {d: i for i, d in enumerate(devices)}
    total = sum(s.duration_us for s in steps)
    gap = round(max(total * GAP_FRACTION, 1.0), 3) if len(steps) > 1 else 0.0
    ops, transfers, runs, offset = [], [], [], 0.0
    for r, step in enumerate(steps):
        index = {}
        for b in step.ops:
            index[(b.device, b.name)] = len(ops)
            ops.append({"lane": lane_of[b.device], "row": 0, "run": r,
                        "kind": bar_kind(b.op, b.name), "name": b.name, "op": b.op,
                        "start": round(b.start_us + offset, 3),
                        "end": round(b.end_us + offset, 3), "thread": b.thread_id,
                        "outputs": [_describe(o) for o in b.outputs]})
        for t in step.transfers:
            transfers.append({"src": lane_of[t.src_device], "dst": lane_of[t.dst_device],
                              "send": index[(t.send.device, t.send.name)],
                              "recv": index[(t.recv.device, t.recv.name)], "run": r,
                              "tensor": t.tensor, "bytes": t.bytes,
                              "start": round(t.start_us + offset, 3),
                              "end": round(t.end_us + offset, 3)})
        label = f"run {r + 1} · {format_us(step.duration_us)}" if len(steps) > 1 \
            else f"{format_us(step.duration_us)}"
        runs.append({"label": label, "start": offset,
                     "end": round(offset + step.duration_us, 3)})
        offset = round(offset + step.duration_us + gap, 3)
    lanes = []
    for lane, device in enumerate(devices):
        mine = [i for i, op in enumerate(ops) if op["lane"] == lane]
        rows, count = pack_rows([(ops[i]["start"], ops[i]["end"],
                                  ops[i]["thread"]) for i in mine])
        for i, row in zip(mine, rows):
            ops[i]["row"] = row
        lanes.append({"device": device, "color": color_of(device, devices), "rows": count})
    for op in ops:
        del op["thread"]
    return {"lanes": lanes, "ops": ops, "transfers": transfers, "runs": runs,
            "duration": runs[-1]["end"] if runs else 0.0}


def _describe(output) -> str:
    shape = ",".join(str(d) for d in output.shape)
    return f"{output.dtype or '?'}[{shape}] {format_bytes(output.bytes)}"
