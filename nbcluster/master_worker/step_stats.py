"""Turns an executor's raw timing rows into StepStats protos (per device)."""
from __future__ import annotations

import threading

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.proto import config_pb2


def build_step_stats(runs: list) -> "config_pb2.StepStats":
    """runs: [(executor, rows)], rows as `Executor.run` records them:
    (node index, start seconds, end seconds, thread id, outputs)."""
    stats = config_pb2.StepStats()
    names = {t.ident: t.name for t in threading.enumerate()}
    for executor, rows in runs:
        dev = stats.dev_stats.add(device=executor.device.name)
        for index, start, end, thread, outputs in rows or ():
            node = executor.nodes[index]
            start_us = int(start * 1e6)
            end_rel = max(0, int(end * 1e6) - start_us)
            tid = thread & 0xFFFFFFFF
            ns = dev.node_stats.add(
                node_name=node.name, all_start_micros=start_us, op_start_rel_micros=0,
                op_end_rel_micros=end_rel, all_end_rel_micros=end_rel,
                all_start_nanos=int(start * 1e9), op_end_rel_nanos=int((end - start) * 1e9),
                all_end_rel_nanos=int((end - start) * 1e9), thread_id=tid,
                timeline_label=f"{node.name} = {node.op}({', '.join(node.inputs)})")
            dev.thread_names[tid] = names.get(thread, str(thread))
            for slot, value in enumerate(outputs or ()):
                _describe(ns.output.add(slot=slot), value)
    return stats


def _describe(output, value) -> None:
    read = getattr(value, "read", None)
    if read is not None:  # a variable reference: describe its value
        try:
            value = read()
        except Exception:  # noqa: BLE001 - an uninitialized ref has no description
            return
    if not hasattr(value, "shape") or not hasattr(value, "dtype"):
        return
    desc = output.tensor_description
    try:
        desc.dtype = dtypes.as_dtype(np.dtype(value.dtype)).as_datatype_enum
    except TypeError:
        pass
    for d in value.shape:
        desc.shape.dim.add(size=int(d))
    desc.allocation_description.requested_bytes = int(value.nbytes)
    desc.allocation_description.allocated_bytes = int(value.nbytes)
    desc.allocation_description.allocator_name = "cpu" if isinstance(value, np.ndarray) \
        else "gpu"
