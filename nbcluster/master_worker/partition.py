"""Partitioning: split a placed graph by a key of its devices, adding a
_Send/_Recv pair on every edge that crosses partitions.

Rule: a pure function of (nodes, placement, key); no I/O. The master splits
by task, each worker splits its share by device: the same function twice.
The second split sees the first one's _Send/_Recv nodes, so a name it makes
must be new to the nodes it was given, not only to its own (an executor
keys its nodes by name: a duplicate silently drops a Send).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.framework.node import Node, input_ref, parse_input
from nbcluster.master_worker.control_flow_partition import ControlLoops
from nbcluster.runtime.control_flow_executor import needs_frames


def partition(nodes: list[Node], key: Callable[[str], object],
              incarnation: Callable[[str], int]) -> dict:
    """Returns {partition key: [Node, ...]} with Send/Recv pairs added.

    Args:
      nodes: placed nodes (each `device` a full device name).
      key: device name -> partition key (a task, or the device itself).
      incarnation: device name -> the incarnation of its task's devices.
    """
    cf = needs_frames(nodes)  # then every pair carries deadness and its frame
    taken = {n.name for n in nodes}  # names in use, including those of an earlier split
    loops = ControlLoops(nodes, key, taken) if cf else None
    if loops is not None:
        nodes = list(nodes) + loops.added
    by_name = {n.name: n for n in nodes}
    parts: dict[object, list[Node]] = {}
    recvs: dict[tuple, str] = {}  # (tensor or ^op, dst device) -> recv node name
    counter = [0]

    def new_suffix(stem: str) -> str:
        while True:
            counter[0] += 1
            suffix = f"{stem}_{counter[0]}"
            names = (f"_send_{suffix}", f"_recv_{suffix}", f"_ctl_const_{suffix}")
            if not taken.intersection(names):
                taken.update(names)
                return suffix

    def add(part_key, node: Node) -> None:
        parts.setdefault(part_key, []).append(node)

    def cross(src: Node, index: int, dst_device: str) -> str:
        edge = (src.name, index, dst_device)
        if edge in recvs:
            return recvs[edge]
        control = index < 0
        tensor = f"{src.name}:{index}" if not control else f"^{src.name}"
        suffix = new_suffix(f"{src.name}_{'ctl' if control else index}")
        if control:
            dummy = Node(f"_ctl_const_{suffix}", "Const", (f"^{src.name}",), src.device,
                         {"value": _dummy(), "dtype": dtypes.float32})
            add(key(src.device), dummy)
            sent_from, dtype = dummy.name, dtypes.float32
        else:
            sent_from, dtype = input_ref(src.name, index), output_dtype(src, index)
        attrs = {"tensor_name": tensor, "send_device": src.device,
                 "send_device_incarnation": incarnation(src.device),
                 "recv_device": dst_device, "client_terminated": False}
        if cf:
            attrs["_cf"] = True
        add(key(src.device), Node(f"_send_{suffix}", "_Send", (sent_from,), src.device,
                                  dict(attrs, T=dtype)))
        # In a frame, the Recv waits for its partition's pivot of it (control_flow_partition.py).
        gate = loops.recv_control(src, dst_device) if loops is not None else None
        recv = Node(f"_recv_{suffix}", "_Recv", ("^" + gate,) if gate else (), dst_device,
                    dict(attrs, tensor_type=dtype))
        add(key(dst_device), recv)
        recvs[edge] = recv.name
        return recv.name

    for node in nodes:
        part = key(node.device)
        new_inputs = []
        for ref in node.inputs:
            src_name, index = parse_input(ref)
            src = by_name.get(src_name)
            if src is None or key(src.device) == part:
                new_inputs.append(ref)
            elif index < 0:
                new_inputs.append("^" + cross(src, -1, node.device))
            else:
                new_inputs.append(cross(src, index, node.device))
        add(part, node.with_changes(inputs=tuple(new_inputs)))
    return parts


def _dummy() -> np.ndarray:
    value = np.zeros((), np.float32)
    value.flags.writeable = False
    return value


def output_dtype(node: Node, index: int):
    """The dtype of a node's output, from the `_output_types` sessions attach."""
    types = node.attrs.get("_output_types") or ()
    return types[index] if index < len(types) else dtypes.float32
