"""A traced step as data: RunMetadata → device lanes, op bars and Send/Recv transfers.

Pure functions of the RunMetadata: no I/O, no widgets. Times are microseconds
(floats, from the nanosecond fields where the tracer filled them) relative to
the step's first op start, so bars from tasks on one host share one axis.

TensorFlow's tasks report no stats for their cross-task _Send/_Recv nodes;
the receiving device reports each remote tensor as a "RecvTensor" node stat
labelled "[<bytes>B] [<rate>Mb/s] <rendezvous edge> from <src> to <dst>".
Those become the transfers of a step run on TF tasks: a bar named
"RecvTensor <edge> from <src>" on the receiver, from the tensor's producer on the sender (found through the
partition graphs' _Send of that edge, else the edge's name), or from a
zero-length "_Send" marker there when the producer left no stat either.
"""
from __future__ import annotations

import dataclasses
import re

import nbcluster as tf

FULL_TRACE_HINT = ("run the step with options=tf.RunOptions(trace_level="
                   "tf.RunOptions.FULL_TRACE) and pass that run_metadata")
_LABEL = re.compile(r"^(?P<name>.*?) = (?P<op>[\w.>-]+)\((?P<inputs>.*)\)$", re.S)
_RECV_TENSOR = re.compile(r"^\[\d+B\](?: \[[^\]]*\])* (?P<edge>\S+) from (?P<src>\S+) to \S+$")
_RECV_BAR = re.compile(r"^RecvTensor (?P<edge>\S+) from (?P<src>\S+)$")
_EDGE = re.compile(r"^edge_\d+_(?P<node>.+)$")  # TF's rendezvous name of a graph edge


@dataclasses.dataclass(frozen=True)
class Output:
    """One output tensor of an op as the tracer described it."""

    dtype: str            # "float32", or "" when not described
    shape: tuple          # dims, -1 where unknown
    bytes: int


@dataclasses.dataclass(frozen=True)
class OpBar:
    """One op's run on one device: a bar from start_us to end_us."""

    device: str
    name: str
    op: str               # op type ("MatMul"), "" when the trace does not say
    start_us: float
    end_us: float
    thread_id: int
    inputs: tuple = ()
    outputs: tuple = ()   # of Output


@dataclasses.dataclass(frozen=True)
class Transfer:
    """A tensor sent between two devices: from its _Send's start to its _Recv's end
    (on TF tasks: from its producer's end, or the RecvTensor's start, to the
    RecvTensor's end)."""

    src_device: str
    dst_device: str
    tensor: str           # "y:0"
    bytes: int
    start_us: float
    end_us: float
    send: OpBar
    recv: OpBar


@dataclasses.dataclass(frozen=True)
class StepTimeline:
    """Everything the views show, in lane order."""

    lanes: tuple                 # device names, job → task → device
    ops: tuple                   # of OpBar, by lane then start
    transfers: tuple             # of Transfer, by start
    duration_us: float
    origin_us: float             # wall-clock µs of the first start (the axis' zero)
    thread_names: dict           # device -> {thread_id: name}


def from_run_metadata(run_metadata) -> StepTimeline:
    """Reads a traced step's step_stats (and partition_graphs, when present).

    Args:
      run_metadata: a `tf.RunMetadata` filled by a run with FULL_TRACE.

    Returns:
      StepTimeline.

    Raises:
      TypeError: run_metadata is not a RunMetadata.
      ValueError: it holds no step stats (the step was not traced).
    """
    if not isinstance(run_metadata, tf.RunMetadata):
        raise TypeError(f"Timeline needs a tf.RunMetadata, got {type(run_metadata).__name__}: "
                        f"{run_metadata!r:.80}")
    dev_stats = [d for d in run_metadata.step_stats.dev_stats if d.node_stats]
    if not dev_stats:
        raise ValueError(f"this RunMetadata has no step_stats: {FULL_TRACE_HINT}")
    types = _op_types(run_metadata.partition_graphs)
    origin = min(_start_us(ns) for d in dev_stats for ns in d.node_stats)
    lanes = tuple(sorted({d.device for d in dev_stats}, key=lane_key))
    ops = []
    for dev in dev_stats:
        ops.extend(_bar(dev.device, ns, origin, types) for ns in dev.node_stats)
    order = {device: i for i, device in enumerate(lanes)}
    ops.sort(key=lambda b: (order[b.device], b.start_us, b.end_us))
    transfers = pair_transfers(ops, run_metadata.partition_graphs)
    markers, received = tensorflow_transfers(ops, run_metadata.partition_graphs, set(lanes))
    if markers:
        ops.extend(markers)
        ops.sort(key=lambda b: (order[b.device], b.start_us, b.end_us))
    transfers = sorted(transfers + received, key=lambda t: (t.start_us, t.end_us, t.tensor))
    names: dict = {}
    for dev in dev_stats:
        names.setdefault(dev.device, {}).update(dict(dev.thread_names))
    return StepTimeline(lanes=lanes, ops=tuple(ops), transfers=tuple(transfers),
                        duration_us=max(b.end_us for b in ops), origin_us=origin,
                        thread_names=names)


def lane_key(device: str) -> tuple:
    """Sort key putting devices job → task → device (task 10 after task 2)."""
    try:
        spec = tf.DeviceSpec.from_string(device)
    except (tf.errors.InvalidArgumentError, ValueError):  # a foreign name sorts last
        return (1, device, 0, 0, "", 0, device)
    return (0, spec.job or "", spec.task if spec.task is not None else -1,
            spec.replica or 0, spec.device_type or "",
            spec.device_index if spec.device_index is not None else -1, device)


def is_client(device: str) -> bool:
    """True for the client end of a feed or fetch (not a lane)."""
    return device.startswith("/job:client")


def pair_transfers(ops, partition_graphs=()) -> list:
    """Pairs each cross-device _Send with its _Recv.

    By the partition graphs' (tensor_name, send_device, recv_device) attrs
    where they describe the pair, else by name (`_send_<key>` ↔
    `_recv_<key>`). Feeds and fetches (the client's end) are not transfers.

    Args:
      ops: OpBar values of the step.
      partition_graphs: the RunMetadata's GraphDefs, possibly empty.

    Returns:
      list of Transfer, by send start.
    """
    by_place = {(b.device, b.name): b for b in ops}
    pairs = _pairs_by_attrs(partition_graphs or ())
    # A send the graphs do not describe (a device split inside a task) still
    # pairs by name.
    paired = {send_at for _, send_at, _ in pairs}
    pairs += [p for p in _pairs_by_name(ops) if p[1] not in paired]
    transfers = []
    for tensor, send_at, recv_at in pairs:
        send, recv = by_place.get(send_at), by_place.get(recv_at)
        if send is None or recv is None or send.device == recv.device:
            continue
        nbytes = sum(o.bytes for o in recv.outputs[:1])
        transfers.append(Transfer(send.device, recv.device, tensor, nbytes,
                                  send.start_us, recv.end_us, send, recv))
    transfers.sort(key=lambda t: (t.start_us, t.end_us, t.tensor))
    return transfers


def tensorflow_transfers(ops, partition_graphs, lanes: set) -> tuple:
    """(marker bars, transfers) for TF's "RecvTensor" bars among `ops`.

    Args:
      ops: OpBar values of the step (RecvTensor bars as `_bar` names them).
      partition_graphs: the RunMetadata's GraphDefs, possibly empty.
      lanes: the step's devices; a transfer from elsewhere is not drawn.

    Returns:
      (list of zero-length "_Send" OpBars to add, list of Transfer).
    """
    by_place = {(b.device, b.name): b for b in ops}
    sends, nodes = {}, {}
    for graph in partition_graphs or ():
        for node in graph.node:
            nodes[(node.device, node.name)] = node
            if node.op == "_Send" and "tensor_name" in node.attr:
                sends[(node.device, node.attr["tensor_name"].s.decode())] = node
    markers, transfers = [], []
    for recv in ops:
        match = _RECV_BAR.match(recv.name) if recv.op == "RecvTensor" else None
        if match is None or match["src"] not in lanes or match["src"] == recv.device:
            continue
        src, edge = match["src"], match["edge"]
        send = sends.get((src, edge))
        source = send.input[0] if send is not None and send.input else edge
        edge_match = _EDGE.match(source)
        producer, _, slot = (edge_match["node"] if edge_match else source).partition(":")
        tensor = _fed_tensor(nodes.get((src, producer))) or f"{producer}:{slot or 0}"
        sender = by_place.get((src, producer))
        if sender is None:
            sender = OpBar(device=src, name=send.name if send is not None else f"_Send {edge}",
                           op="_Send", start_us=recv.start_us, end_us=recv.start_us,
                           thread_id=0)
            markers.append(sender)
        nbytes = sum(o.bytes for o in recv.outputs[:1])
        transfers.append(Transfer(src, recv.device, tensor, nbytes,
                                  min(sender.end_us, recv.start_us), recv.end_us, sender, recv))
    return markers, transfers


def _fed_tensor(node) -> str:
    """A feed's tensor name, where `node` is the client-terminated _Recv of one."""
    if node is None or node.op != "_Recv" or not node.attr["client_terminated"].b:
        return ""
    return node.attr["tensor_name"].s.decode()


def _pairs_by_attrs(graphs) -> list:
    ends: dict = {}
    for graph in graphs:
        for node in graph.node:
            if node.op not in ("_Send", "_Recv") or "tensor_name" not in node.attr:
                continue
            key = tuple(node.attr[k].s.decode() for k in
                        ("tensor_name", "send_device", "recv_device"))
            if is_client(key[1]) or is_client(key[2]):
                continue
            ends.setdefault(key, {})[node.op] = (node.device, node.name)
    return [(key[0], e["_Send"], e["_Recv"]) for key, e in ends.items()
            if "_Send" in e and "_Recv" in e]


def _pairs_by_name(ops) -> list:
    recvs: dict = {}
    for b in ops:
        if b.name.startswith("_recv_"):
            recvs.setdefault(b.name[len("_recv_"):], []).append(b)
    pairs = []
    for b in ops:
        if not b.name.startswith("_send_"):
            continue
        for recv in recvs.get(b.name[len("_send_"):], ()):
            if recv.device != b.device:
                tensor = b.inputs[0] if b.inputs else b.name[len("_send_"):]
                if ":" not in tensor and not tensor.startswith("^"):
                    tensor += ":0"
                pairs.append((tensor, (b.device, b.name), (recv.device, recv.name)))
    return pairs


def _op_types(graphs) -> dict:
    return {(n.device, n.name): n.op for g in graphs for n in g.node}


def _start_us(ns) -> float:
    return ns.all_start_nanos / 1e3 if ns.all_start_nanos else float(ns.all_start_micros)


def _length_us(ns) -> float:
    nanos = max(ns.op_end_rel_nanos, ns.all_end_rel_nanos)
    if nanos:
        return nanos / 1e3
    return float(max(ns.op_end_rel_micros, ns.all_end_rel_micros))


def _bar(device: str, ns, origin: float, types: dict) -> OpBar:
    op, inputs, name = "", (), ns.node_name
    match = _LABEL.match(ns.timeline_label)
    received = _RECV_TENSOR.match(ns.timeline_label) if name == "RecvTensor" else None
    if received:  # TF's remote tensors: one stat each, all named RecvTensor
        op, name = "RecvTensor", f"RecvTensor {received['edge']} from {received['src']}"
    elif match:
        op = match["op"]
        inputs = tuple(i.strip() for i in match["inputs"].split(",") if i.strip())
    op = op or types.get((device, ns.node_name), "")
    start = round(_start_us(ns) - origin, 3)  # ns resolution; no float noise in traces
    return OpBar(device=device, name=name, op=op, start_us=start,
                 end_us=round(start + _length_us(ns), 3), thread_id=int(ns.thread_id),
                 inputs=inputs, outputs=tuple(_output(o) for o in ns.output))


def _output(output) -> Output:
    desc = output.tensor_description
    try:
        dtype = tf.as_dtype(desc.dtype).name if desc.dtype else ""
    except TypeError:
        dtype = str(desc.dtype)
    shape = tuple(int(d.size) for d in desc.shape.dim)
    return Output(dtype, shape, int(desc.allocation_description.requested_bytes))
