"""A step's subgraph: the session's graph pruned to what its feeds, fetches
and targets need, and the client-terminated _Recv/_Send nodes that carry
feeds in and fetches out (TF's subgraph rewriting).

Rule: pure functions of (nodes, feeds, fetches, targets); no I/O.
"""
from __future__ import annotations

from typing import Optional

from nbcluster import errors
from nbcluster.framework import dtypes
from nbcluster.framework.node import Node, parse_input
from nbcluster.master_worker.partition import output_dtype


def check_tensor(nodes: dict, name: str) -> None:
    op, sep, index = name.rpartition(":")
    if not sep or not index.isdigit() or op not in nodes:
        raise errors.InvalidArgumentError(
            None, None, f"Tensor {name}, specified in either feed_devices or fetch_devices "
                        f"was not found in the Graph")
    types = nodes[op].attrs.get("_output_types")
    if types is not None and int(index) >= len(types):
        raise errors.InvalidArgumentError(
            None, None, f"Tensor {name}: node '{op}' has only {len(types)} outputs")


def prune(nodes: dict, fetches: list, targets: tuple, fed: set) -> set:
    needed: set = set()
    stack = [parse_input(f)[0] for f in fetches] + list(targets)
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        node = nodes.get(name)
        if node is None:
            raise errors.InvalidArgumentError(None, None, f"Node '{name}' is needed but is "
                                                          f"not in the graph")
        needed.add(name)
        for ref in node.inputs:
            src, index = parse_input(ref)
            if index >= 0 and f"{src}:{index}" in fed:
                continue
            stack.append(src)
    return needed


def feed_nodes(placed: list, fed: set, nodes: dict) -> list:
    """A client-terminated _Recv per (fed tensor, consuming device); rewires inputs."""
    recvs: dict = {}
    for i, node in enumerate(placed):
        changed = False
        inputs = list(node.inputs)
        for slot, ref in enumerate(inputs):
            src, index = parse_input(ref)
            tensor = f"{src}:{index}"
            if index < 0 or tensor not in fed:
                continue
            key = (tensor, node.device)
            if key not in recvs:
                recvs[key] = Node(f"_recv_{src}_{index}_{len(recvs)}", "_Recv", (), node.device,
                                  {"tensor_name": tensor, "client_terminated": True,
                                   "send_device": "/job:client", "recv_device": node.device,
                                   "send_device_incarnation": 0,
                                   "tensor_type": output_dtype(nodes[src], index)})
            inputs[slot] = recvs[key].name
            changed = True
        if changed:
            placed[i] = node.with_changes(inputs=tuple(inputs))
    return list(recvs.values())


def fetch_node(tensor: str, device: str, nodes: dict) -> Node:
    src, index = parse_input(tensor)
    return Node(f"_send_{src}_{index}_fetch", "_Send", (tensor if index else src,), device,
                {"tensor_name": tensor, "client_terminated": True, "send_device": device,
                 "recv_device": "/job:client", "send_device_incarnation": 0,
                 "T": output_dtype(nodes[src], index)})


def check_feed_dtypes(nodes: dict, feeds: dict, known: Optional[set] = None) -> None:
    """Refuses a fed value whose dtype is not the graph's for that tensor.

    A client converts feeds to the tensor's dtype before sending them (TF's
    Session.run does too); a request that still disagrees is a peer's
    mistake, not something to cast quietly. `known`, when given, holds the
    (tensor, numpy dtype) pairs found right before (a graph's names never
    change meaning), and gets each new one.

    Raises:
      InvalidArgumentError: naming the tensor and both dtypes.
    """
    for name, value in feeds.items():
        key = (name, getattr(value, "dtype", None))
        if known is not None and key in known:
            continue
        op, sep, index = name.rpartition(":")
        node = nodes.get(op) if sep and index.isdigit() else None
        types = node.attrs.get("_output_types") if node is not None else None
        if not types or int(index) >= len(types):
            continue  # unknown tensors are reported by check_tensor; no types: nothing to check
        declared = types[int(index)]
        try:
            given = dtypes.as_dtype(value.dtype)
        except (TypeError, AttributeError):
            given = None
        if given is None or getattr(declared, "base_dtype", declared) != given.base_dtype:
            shown = given.name if given is not None else type(value).__name__
            raise errors.InvalidArgumentError(
                None, None, f"Feed for tensor {name} is {shown}, but the graph's {name} is "
                            f"{getattr(declared, 'name', declared)}", node_name=op)
        if known is not None and key[1] is not None:
            if len(known) >= _KNOWN_FEEDS:
                known.clear()
            known.add(key)


_KNOWN_FEEDS = 1024
