"""PlacementView's data: each op's device, dtype, shape and time; the tensors sent between devices.

Rule: pure functions of (Graph | RunMetadata, fetches); no I/O, no widgets.
A Graph gives the requested placement (each op's `device` as `tf.device` set
it) and predicts a transfer on every data edge between two placed devices.
A RunMetadata gives the actual placement: its partition graphs' `_Send`/`_Recv`
pairs become transfers from the producer to its consumers (the pairs
themselves are not ops of the view), `/job:client` stands for the session's
feeds and fetches, and step_stats gives times and tensor bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

import nbcluster as tf
from nbcluster.framework.node import parse_input
from nbcluster.jupyter.widgets.devices import place_of

CLIENT = "/job:client"     # the session's side of feeds and fetches
FETCH_PREFIX = "fetch:"    # a fetch's node on the client: "fetch:y:0"
SEND_RECV = ("_Send", "_Recv", "_HostSend", "_HostRecv")


@dataclass
class OpInfo:
    """One op of the view."""

    name: str
    op: str
    device: str                     # canonical device name; "" when unplaced
    dtype: str = ""                 # output dtypes, e.g. "float32" ("; " between outputs)
    shape: str = ""                 # output shapes, e.g. "[?, 784]"
    inputs: tuple = ()              # producers of its data inputs (op names)
    control_inputs: tuple = ()      # ops it waits for
    requested: str = ""             # the device the graph asked for (RunMetadata + graph)
    start_us: Optional[int] = None  # since the step's first op started
    time_us: Optional[int] = None   # op_end_rel_micros


@dataclass(frozen=True)
class Transfer:
    """One tensor sent from one device to another (a _Send/_Recv pair)."""

    tensor: str                 # "w/read:0"; "^op" for a control edge
    src_node: str
    src_device: str
    dst_device: str
    dst_nodes: tuple            # the ops on dst_device that consume it
    bytes: Optional[int]        # None when neither stats nor a static shape tell
    time_us: Optional[int] = None  # how long the _Recv took

    @property
    def control(self) -> bool:
        return self.tensor.startswith("^")


@dataclass
class Placement:
    """The ops of a view and the transfers between them."""

    ops: dict = field(default_factory=dict)        # name -> OpInfo, in graph order
    transfers: list = field(default_factory=list)  # [Transfer]
    actual: bool = False                           # from RunMetadata (else requested)

    @property
    def devices(self) -> list:
        """The sorted devices ops run on (not the client, not "")."""
        return sorted({o.device for o in self.ops.values() if o.device and o.device != CLIENT})


def canonical_device(name: str) -> str:
    """The name DeviceSpec writes ("/cpu:0" -> "/device:CPU:0"); "" stays ""."""
    return place_of(name or "").device


def shape_str(dims) -> str:
    """ "[?, 784]" from dims (None or -1 for unknown); "<unknown>" for an unknown rank."""
    if dims is None:
        return "<unknown>"
    return "[" + ", ".join("?" if d is None or d < 0 else str(d) for d in dims) + "]"


def nbytes_of(dtype, dims) -> Optional[int]:
    """dtype.itemsize × elements, or None unless the shape is fully known."""
    if dtype is None or dims is None or any(d is None or d < 0 for d in dims):
        return None
    count = 1
    for d in dims:
        count *= d
    return count * dtype.itemsize


def static_dims(tensor) -> Optional[list]:
    """A Tensor's static dims (None entries unknown), or None for an unknown rank."""
    shape = tensor.shape
    return None if shape.rank is None else shape.as_list()


def from_graph(graph: "tf.Graph") -> Placement:
    """The requested placement of every op of `graph`.

    Args:
      graph: a tf.Graph.

    Returns:
      a Placement whose transfers are the data edges between two placed,
      different devices, sized by dtype × static shape when it is known.
    """
    ops: dict = {}
    transfers: dict = {}  # (tensor, dst device) -> [src, src device, consumers, bytes]
    for op in graph.get_operations():
        device = canonical_device(op.device)
        ops[op.name] = OpInfo(
            op.name, op.type, device,
            dtype="; ".join(t.dtype.name for t in op.outputs),
            shape="; ".join(shape_str(static_dims(t)) for t in op.outputs),
            inputs=tuple(t.op.name for t in op.inputs),
            control_inputs=tuple(c.name for c in op.control_inputs))
        for t in op.inputs:
            src_device = canonical_device(t.op.device)
            if not src_device or not device or src_device == device:
                continue
            entry = transfers.setdefault(
                (t.name, device), [t.op.name, src_device, [],
                                   nbytes_of(t.dtype, static_dims(t))])
            entry[2].append(op.name)
    return Placement(ops, [Transfer(tensor, src, src_dev, dst_dev, tuple(consumers), nbytes)
                           for (tensor, dst_dev), (src, src_dev, consumers, nbytes)
                           in transfers.items()])


def attr_str(node, key: str) -> str:
    """A NodeDef's string attr, decoded ("" when absent)."""
    value = node.attr[key].s if key in node.attr else b""
    return value.decode() if isinstance(value, bytes) else str(value)


class StepStatsIndex:
    """A step's NodeExecStats by (device, node name), and its first start time."""

    def __init__(self, step_stats) -> None:
        self.by_key: dict = {}
        for dev in step_stats.dev_stats:
            device = canonical_device(dev.device)
            for ns in dev.node_stats:
                self.by_key[(device, ns.node_name)] = ns
        starts = [ns.all_start_micros for ns in self.by_key.values() if ns.all_start_micros]
        self.t0 = min(starts) if starts else 0

    def get(self, device: str, name: str):
        return self.by_key.get((device, name))

    def output(self, device: str, name: str, slot: int):
        """(dtype, dims, bytes) of one output, or None."""
        ns = self.get(device, name)
        for out in (ns.output if ns is not None else ()):
            if out.slot == slot:
                desc = out.tensor_description
                dims = [d.size for d in desc.shape.dim]
                nbytes = desc.allocation_description.requested_bytes or None
                return tf.as_dtype(desc.dtype) if desc.dtype else None, dims, nbytes
        return None


def fetch_names(fetches) -> list:
    """The op names `fetches` stand for.

    Args:
      fetches: a Tensor, Operation, Variable, name ("y" or "y:0"), or a
        list/tuple of them.

    Returns:
      op names, in order, without repeats.

    Raises:
      TypeError: an element is none of those.
    """
    items = list(fetches) if isinstance(fetches, (list, tuple)) else [fetches]
    names: list = []
    for item in items:
        unwrap = getattr(item, "_as_graph_element", None)
        value = unwrap() if unwrap is not None else item
        if isinstance(value, tf.Tensor):
            name = value.op.name
        elif isinstance(value, tf.Operation):
            name = value.name
        elif isinstance(value, str) and value:
            name = parse_input(value)[0]
        else:
            raise TypeError(f"fetches: expected a Tensor, Operation or name, got "
                            f"{type(item).__name__} {item!r}")
        if name not in names:
            names.append(name)
    return names


def prune(placement: Placement, fetches: list) -> Placement:
    """Only the ops `fetches` need (their inputs and control inputs, transitively).

    Args:
      placement: the whole view.
      fetches: op names (see `fetch_names`).

    Returns:
      a new Placement; client fetch nodes stay for the fetched ops only.

    Raises:
      ValueError: a fetch names no op of the view.
    """
    missing = [name for name in fetches if name not in placement.ops]
    if missing:
        raise ValueError(f"fetches: no op named {', '.join(map(repr, missing))} in the "
                         f"{'run metadata' if placement.actual else 'graph'}")
    keep: set = set()
    stack = list(fetches)
    while stack:
        name = stack.pop()
        if name in keep or name not in placement.ops:
            continue
        keep.add(name)
        op = placement.ops[name]
        stack.extend(op.inputs + op.control_inputs)
    roots = set(fetches)
    keep |= {n for n, o in placement.ops.items()
             if n.startswith(FETCH_PREFIX) and o.device == CLIENT and set(o.inputs) & roots}
    ops = {n: o for n, o in placement.ops.items() if n in keep}
    transfers = []
    for t in placement.transfers:
        consumers = tuple(c for c in t.dst_nodes if c in keep)
        if t.src_node in keep and consumers:
            transfers.append(replace(t, dst_nodes=consumers))
    return Placement(ops, transfers, placement.actual)
