"""Session: sends a graph to a master once, extends it, and runs steps.

Target "" runs a private master and worker in this process; "grpc://h:p"
talks to that server's master (directly, with no gRPC hop, when the server
lives in this process).
"""
from __future__ import annotations

import threading
from typing import Optional

import numpy as np

from nbcluster.client.fetches import FetchStructure, fetch_key
from nbcluster.client.targets import connect
from nbcluster.framework import default_session, dtypes
from nbcluster.framework.graph import get_default_graph
from nbcluster.framework.operation import Tensor
from nbcluster.proto import config_pb2
from nbcluster.rpc.codec.tensor_decoding import aligned_empty

_CACHED_STRUCTURES = 256  # per session; the cache starts over past this
_ALIGNED_COPY_BYTES = 1 << 20  # a fetched copy from here up starts on a 64-byte boundary


class DeviceAttributes:
    """What `Session.list_devices()` returns per device (TF's names)."""

    def __init__(self, proto) -> None:
        self.name = proto.name
        self.device_type = proto.device_type
        self.memory_limit_bytes = proto.memory_limit
        self.incarnation = proto.incarnation

    def __repr__(self) -> str:
        return (f"_DeviceAttributes({self.name}, {self.device_type}, "
                f"{self.memory_limit_bytes}, {self.incarnation})")


class Session:
    """A connection to a master that runs this graph's steps.

    Args:
      target: "" (in process) or "grpc://host:port" of a Server.
      graph: the graph to run (default: the default graph).
      config: a ConfigProto, merged over the server's default session config.
    Raises:
      NotFoundError: `target` is not a known kind of target.
    Example:
      >>> with Session() as sess:
      ...     sess.run(constant(2.0) * 3.0)
      6.0
    """

    def __init__(self, target: str = "", graph=None, config=None) -> None:
        if isinstance(target, bytes):
            target = target.decode()
        if config is not None and not isinstance(config, config_pb2.ConfigProto):
            raise TypeError(f"config must be a tf.ConfigProto, but got {type(config)}")
        self._target = target
        self._graph = graph or get_default_graph()
        self._config = config
        self._master = connect(target, config)
        self._handle: Optional[str] = None
        self._sent = 0  # ops of the graph the master has
        self._version = 0  # the graph version the master returned (TF: one per extend)
        self._closed = False
        self._lock = threading.Lock()
        self._default_ctx = None
        # Graphs only grow and names never change meaning, so a resolved
        # fetch structure or feed key stays right for the session's life.
        self._structures: dict = {}
        self._feed_tensors: dict = {}
        self._fed_shapes: dict = {}  # (tensor, shape) found compatible -> the tensor's shape then

    graph = property(lambda self: self._graph)
    sess_str = property(lambda self: self._target)

    @property
    def graph_def(self):
        return self._graph.as_graph_def()

    # -- running -----------------------------------------------------------
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs the ops and evaluates the tensors in `fetches` (any nesting)."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        structure = self._structure(fetches)
        feeds = self._feeds(feed_dict)
        handle = self._sync_graph()
        values, metadata = self._master.run_step(
            handle, feeds, structure.tensor_names, structure.op_names, options)
        if run_metadata is not None and metadata is not None:
            run_metadata.MergeFrom(metadata)
        return structure.build([_result(v) for v in values])

    def _sync_graph(self) -> str:
        with self._lock:
            ops = self._graph.operations_since(0 if self._handle is None else self._sent)
            if self._handle is None:
                nodes = [op.to_node() for op in ops]
                self._handle, self._version = self._master.create_session(
                    nodes, self._config, self._target or None)
                self._sent = len(nodes)
            elif ops:
                nodes = [op.to_node() for op in ops]
                self._version = self._master.extend_session(self._handle, nodes, self._version)
                self._sent += len(nodes)
            return self._handle

    def _structure(self, fetches) -> FetchStructure:
        """The FetchStructure of `fetches`, made once per distinct structure
        (a training loop fetches the same things every step)."""
        key = fetch_key(fetches)
        structure = self._structures.get(key) if key is not None else None
        if structure is None:
            structure = FetchStructure(self._graph, fetches)
            if key is not None:
                if len(self._structures) >= _CACHED_STRUCTURES:
                    self._structures.clear()
                self._structures[key] = structure
        return structure

    def _feeds(self, feed_dict) -> dict:
        feeds: dict = {}
        for key, value in (feed_dict or {}).items():
            tensor = self._feed_tensors.get(key) if _hashable(key) else None
            if tensor is None:
                tensor = self._feed_tensor(key)
            feeds[tensor.name] = _feed_value(tensor, value, self._fed_shapes)
        return feeds

    def _feed_tensor(self, key):
        try:
            tensor = self._graph.as_graph_element(key, allow_operation=False)
        except (KeyError, ValueError) as e:
            raise ValueError(f"Cannot interpret feed_dict key as Tensor: {e}") from None
        except TypeError as e:
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {e}") from None
        if _hashable(key):
            if len(self._feed_tensors) >= _CACHED_STRUCTURES:
                self._feed_tensors.clear()
            self._feed_tensors[key] = tensor
        return tensor

    # -- lifecycle -----------------------------------------------------------
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._handle is not None:
            self._master.close_session(self._handle)

    def list_devices(self) -> list:
        handle = self._sync_graph()
        return [DeviceAttributes(d) for d in self._master.list_devices(handle)]

    def as_default(self):
        return default_session.as_default(self)

    def __enter__(self) -> "Session":
        self._default_ctx = default_session.as_default(self)
        self._default_ctx.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._default_ctx.__exit__(*exc)
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - a dying interpreter may have torn down gRPC
            pass

    @staticmethod
    def reset(target: str, containers=None, config=None) -> None:
        """Clears `containers` (all if None) on every worker of `target`'s cluster and
        closes every session on its master."""
        if isinstance(target, bytes):
            target = target.decode()
        connect(target, config).reset(list(containers or []))


class InteractiveSession(Session):
    """A Session that makes itself the default session when created."""

    def __init__(self, target: str = "", graph=None, config=None) -> None:
        super().__init__(target, graph, config)
        default_session.push(self)

    def close(self) -> None:
        super().close()
        default_session.remove(self)


def _hashable(key) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


def _feed_value(tensor: Tensor, value, known: Optional[dict] = None) -> np.ndarray:
    """`value` as the array fed for `tensor`; `known` maps the (tensor, shape) pairs
    already found compatible to the tensor's static shape then (`set_shape` makes a
    new one), and gets each new pair."""
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
        raise TypeError("The value of a feed cannot be a tf.Tensor object. Acceptable feed "
                        "values include Python scalars, strings, lists, numpy ndarrays, "
                        "or TensorHandles.")
    if tensor.dtype == dtypes.string:
        from nbcluster.framework.values import to_numpy
        array = to_numpy(value, dtypes.string)
    else:
        try:
            array = np.asarray(value, dtype=tensor.dtype.as_numpy_dtype)
        except (TypeError, ValueError) as e:
            raise ValueError(f"Cannot feed value {value!r} for Tensor '{tensor.name}' of "
                             f"dtype {tensor.dtype.name}: {e}") from None
    if known is not None and known.get((tensor, array.shape)) is tensor.shape:
        return array
    if not tensor.shape.is_compatible_with(array.shape):
        raise ValueError(f"Cannot feed value of shape {array.shape} for Tensor "
                         f"'{tensor.name}', which has shape '{tensor.shape}'")
    if known is not None:
        if len(known) >= _CACHED_STRUCTURES:
            known.clear()
        known[(tensor, array.shape)] = tensor.shape
    return array


def _result(value):
    """A fetched value as TF returns it: numpy scalars for 0-d, writable arrays.

    Values held by the runtime (variables, constants), decoded in place from a
    small message or read in place from a shared-memory block are read-only; the
    user gets a copy of those, a large one on a 64-byte boundary as the wire's
    own arrays (for a small one that costs more than the copy).
    """
    if not isinstance(value, np.ndarray):
        return value
    if value.ndim == 0:
        return value[()] if value.dtype != object else value.item()
    if value.flags.writeable:
        return value
    if value.nbytes < _ALIGNED_COPY_BYTES or value.dtype == object:
        return value.copy()
    copy = aligned_empty(value.shape, value.dtype)
    np.copyto(copy, value)
    return copy



