"""The actual placement of a step, read from its RunMetadata (partition graphs and step stats).

Rule: a pure function of (RunMetadata, Graph or None); no I/O.
Each `_Recv` names the tensor it gets ("w/read:0" or "^op" for a control
edge) and the device that sent it, so a consumer's input is traced back
through any chain of Recvs to the op that produced it; `/job:client` as
sender or receiver is the session's feed or fetch.
"""
from __future__ import annotations

from typing import Optional

import nbcluster as tf
from nbcluster.framework.node import parse_input
from nbcluster.jupyter.widgets.placement_model import (
    CLIENT,
    FETCH_PREFIX,
    SEND_RECV,
    OpInfo,
    Placement,
    StepStatsIndex,
    Transfer,
    attr_str,
    canonical_device,
    nbytes_of,
    shape_str,
    static_dims,
)


def from_run_metadata(run_metadata, graph: Optional["tf.Graph"] = None) -> Placement:
    """The actual placement, times and transfers of one traced step.

    Args:
      run_metadata: a tf.RunMetadata filled by `Session.run` with
        `RunOptions(trace_level=FULL_TRACE, output_partition_graphs=True)`.
      graph: the step's tf.Graph, for requested devices and for dtypes and
        shapes the partition graphs and stats lack.

    Returns:
      a Placement with `actual=True`.

    Raises:
      ValueError: the RunMetadata has no partition graphs.
    """
    if not run_metadata.partition_graphs:
        raise ValueError("run_metadata has no partition_graphs: run the step with "
                         "tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, "
                         "output_partition_graphs=True)")
    return _Reader(run_metadata, graph).placement()


class _Reader:
    """One pass over the partition graphs; `placement()` assembles the result."""

    def __init__(self, run_metadata, graph) -> None:
        self.stats = StepStatsIndex(run_metadata.step_stats)
        self.graph_ops = {op.name: op for op in graph.get_operations()} if graph else {}
        self.nodes = [(canonical_device(n.device), n)
                      for pg in run_metadata.partition_graphs for n in pg.node]
        self.recvs = {(d, n.name): n for d, n in self.nodes if n.op.endswith("Recv")}
        self.consumers: dict = {}  # (device, recv name) -> [consumer op names]

    def origin(self, device: str, name: str) -> tuple:
        """(op name, device) that produced what `name` on `device` holds."""
        while (device, name) in self.recvs:
            recv = self.recvs[(device, name)]
            name = parse_input(attr_str(recv, "tensor_name"))[0]
            device = canonical_device(attr_str(recv, "send_device"))
        return name, device

    def placement(self) -> Placement:
        ops: dict = {}
        for device, node in self.nodes:
            if node.op in SEND_RECV or node.name.startswith("_ctl_const_"):
                continue
            ops[node.name] = self.op_info(device, node)
        transfers = [self.recv_transfer(key, recv) for key, recv in self.recvs.items()]
        for device, node in self.nodes:
            if node.op.endswith("Send") and \
                    canonical_device(attr_str(node, "recv_device")) == CLIENT:
                transfers.append(self.fetch_transfer(device, node, ops))
        for t in transfers:
            if t.src_device == CLIENT and t.src_node not in ops:
                ops[t.src_node] = self.feed_info(t)
        return Placement(ops, transfers, actual=True)

    def op_info(self, device: str, node) -> OpInfo:
        data, control = [], []
        for ref in node.input:
            src, slot = parse_input(ref)
            if (device, src) in self.recvs:
                self.consumers.setdefault((device, src), []).append(node.name)
            (control if slot < 0 else data).append(self.origin(device, src)[0])
        dtypes, shapes = self.outputs(device, node)
        ns = self.stats.get(device, node.name)
        graph_op = self.graph_ops.get(node.name)
        return OpInfo(node.name, node.op, device, "; ".join(dtypes), "; ".join(shapes),
                      tuple(data), tuple(control),
                      requested=canonical_device(graph_op.device) if graph_op else "",
                      start_us=ns.all_start_micros - self.stats.t0 if ns else None,
                      time_us=ns.op_end_rel_micros if ns else None)

    def outputs(self, device: str, node) -> tuple:
        """(dtype names, shape strings) of a node's outputs: stats first, then graph."""
        types = list(node.attr["_output_types"].list.type) if "_output_types" in node.attr \
            else []
        graph_op = self.graph_ops.get(node.name)
        ns = self.stats.get(device, node.name)
        count = max(len(types), len(graph_op.outputs) if graph_op else 0,
                    max((o.slot + 1 for o in ns.output), default=0) if ns else 0)
        dtypes, shapes = [], []
        for slot in range(count):
            dtype, dims = self.tensor_type(device, node.name, slot, types)
            dtypes.append(dtype.name if dtype is not None else "")
            shapes.append(shape_str(dims))
        return dtypes, shapes

    def tensor_type(self, device: str, name: str, slot: int, types=()) -> tuple:
        """(DType or None, dims or None) of one tensor: stats, the node's types, the graph."""
        seen = self.stats.output(device, name, slot)
        graph_op = self.graph_ops.get(name)
        graph_t = graph_op.outputs[slot] if graph_op and slot < len(graph_op.outputs) else None
        dtype = seen[0] if seen and seen[0] is not None else None
        if dtype is None and slot < len(types):
            dtype = tf.as_dtype(types[slot])
        if dtype is None and graph_t is not None:
            dtype = graph_t.dtype
        dims = seen[1] if seen else (static_dims(graph_t) if graph_t is not None else None)
        return dtype, dims

    def tensor_bytes(self, device: str, name: str, slot: int) -> Optional[int]:
        seen = self.stats.output(device, name, slot)
        if seen and seen[2]:
            return seen[2]
        return nbytes_of(*self.tensor_type(device, name, slot)) if slot >= 0 else None

    def recv_transfer(self, key: tuple, recv) -> Transfer:
        device, name = key
        tensor = attr_str(recv, "tensor_name")
        src, src_device = self.origin(device, name)
        slot = parse_input(tensor)[1]
        nbytes = self.tensor_bytes(device, name, 0)
        if nbytes is None and src_device != CLIENT:
            nbytes = self.tensor_bytes(src_device, src, slot)
        if nbytes is None and "tensor_type" in recv.attr and slot >= 0:
            graph_op = self.graph_ops.get(src)
            dims = static_dims(graph_op.outputs[slot]) if graph_op else None
            nbytes = nbytes_of(tf.as_dtype(recv.attr["tensor_type"].type), dims)
        ns = self.stats.get(device, name)
        return Transfer(tensor, src, canonical_device(attr_str(recv, "send_device")), device,
                        tuple(self.consumers.get(key, ())), nbytes,
                        ns.op_end_rel_micros if ns else None)

    def fetch_transfer(self, device: str, send, ops: dict) -> Transfer:
        tensor = attr_str(send, "tensor_name")
        src, slot = parse_input(tensor)
        src, src_device = self.origin(device, src)
        fetch = FETCH_PREFIX + tensor
        dtype, dims = self.tensor_type(src_device, src, slot)
        ops[fetch] = OpInfo(fetch, "_Fetch", CLIENT, dtype.name if dtype else "",
                            shape_str(dims), inputs=(src,))
        return Transfer(tensor, src, device, CLIENT, (fetch,),
                        self.tensor_bytes(src_device, src, slot))

    def feed_info(self, transfer: Transfer) -> OpInfo:
        graph_op = self.graph_ops.get(transfer.src_node)
        key = next((k for k, recv in self.recvs.items() if k[0] == transfer.dst_device
                    and attr_str(recv, "tensor_name") == transfer.tensor), None)
        dtype, dims = self.tensor_type(*key, 0) if key else (None, None)
        if dtype is None and key and "tensor_type" in self.recvs[key].attr:
            dtype = tf.as_dtype(self.recvs[key].attr["tensor_type"].type)
        return OpInfo(transfer.src_node, graph_op.type if graph_op else "_Feed", CLIENT,
                      dtype.name if dtype else "", shape_str(dims),
                      requested=canonical_device(graph_op.device) if graph_op else "")
