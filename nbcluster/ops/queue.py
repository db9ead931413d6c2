"""FIFOQueue and RandomShuffleQueue: a queue resource on its task; dequeue blocks
until data arrives."""
from __future__ import annotations

from typing import Optional

import numpy as np

from nbcluster.framework import dtypes as dtypes_lib
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.tensor_shape import TensorShape, scalar, unknown_shape
from nbcluster.ops.random import get_seed
from nbcluster.ops.shape_inference import constant_value

_QUEUES = ("FIFOQueueV2", "RandomShuffleQueueV2")


def _component_shapes(op, batch: bool, rows=None):
    # As in TF, only the queue op holds the shapes; a dequeue reads them from there
    queue = op.inputs[0].op
    shapes = queue.get_attr("shapes") if queue.type in _QUEUES else None
    shapes = shapes or [unknown_shape()] * len(op.get_attr("component_types"))
    if batch:
        return [TensorShape([rows] + s.as_list()) if s.rank is not None else unknown_shape()
                for s in shapes]
    return shapes


@register_op("FIFOQueueV2", stateful=True)
def _queue_shape(op):
    return [(dtypes_lib.resource, scalar())]


register_op("RandomShuffleQueueV2", stateful=True)(_queue_shape)


@register_op("QueueEnqueueV2", stateful=True, ref_inputs=(0,), blocking=True)
def _enqueue_shape(op):
    return []


register_op("QueueEnqueueManyV2", stateful=True, ref_inputs=(0,), blocking=True)(_enqueue_shape)
register_op("QueueCloseV2", stateful=True, ref_inputs=(0,))(_enqueue_shape)


@register_op("QueueDequeueV2", stateful=True, ref_inputs=(0,), blocking=True)
def _dequeue_shape(op):
    return list(zip(op.get_attr("component_types"), _component_shapes(op, False)))


@register_op("QueueDequeueManyV2", stateful=True, ref_inputs=(0,), blocking=True)
def _dequeue_many_shape(op):
    n = constant_value(op.inputs[1])  # a constant count: batches of that many rows
    rows = int(n) if n is not None and np.ndim(n) == 0 else None
    return list(zip(op.get_attr("component_types"), _component_shapes(op, True, rows)))


@register_op("QueueDequeueUpToV2", stateful=True, ref_inputs=(0,), blocking=True)
def _dequeue_up_to_shape(op):
    return list(zip(op.get_attr("component_types"), _component_shapes(op, True)))


@register_op("QueueSizeV2", stateful=True, ref_inputs=(0,))
def _size_shape(op):
    return [(dtypes_lib.int32, scalar())]


class FIFOQueue:
    """A first-in first-out queue of tuples of tensors, living on its device.

    Example:
      >>> q = FIFOQueue(10, [float32], shapes=[[]])
      >>> enq = q.enqueue([1.0]); deq = q.dequeue()
    """

    _op_type = "FIFOQueueV2"

    def __init__(self, capacity: int, dtypes, shapes=None, names=None,
                 shared_name: Optional[str] = None, name: str = "fifo_queue",
                 _attrs: Optional[dict] = None) -> None:
        if not isinstance(dtypes, (list, tuple)):
            dtypes = [dtypes]
        self._dtypes = [dtypes_lib.as_dtype(d) for d in dtypes]
        self._shapes = [TensorShape(s) for s in shapes] if shapes is not None else None
        if self._shapes is not None and len(self._shapes) != len(self._dtypes):
            raise ValueError(f"Queue shapes {shapes!r} must match dtypes {dtypes!r} in length")
        self._names = list(names) if names is not None else None
        graph = get_default_graph()
        self._graph = graph
        self._queue_ref = graph.create_op(
            self._op_type, [], {"component_types": self._dtypes,
                                "shapes": self._shapes or [], "capacity": int(capacity),
                                "container": "", "shared_name": shared_name or "",
                                **(_attrs or {})},
            name=name).outputs[0]
        self._name = self._queue_ref.op.name

    queue_ref = property(lambda self: self._queue_ref)
    name = property(lambda self: self._name)
    dtypes = property(lambda self: list(self._dtypes))
    shapes = property(lambda self: self._shapes)
    names = property(lambda self: self._names)

    def _components(self, vals, batch: bool) -> list:
        if isinstance(vals, dict):
            if self._names is None:
                raise ValueError("Queue must have names to enqueue a dictionary")
            vals = [vals[n] for n in self._names]
        elif not isinstance(vals, (list, tuple)):
            vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(f"Expected {len(self._dtypes)} components for queue "
                             f"'{self._name}', got {len(vals)}")
        tensors = [convert_to_tensor(v, dtype=d) for v, d in zip(vals, self._dtypes)]
        for t, s in zip(tensors, self._shapes or []):
            got = t.shape[1:] if batch and t.shape.rank else t.shape
            if not got.is_compatible_with(s):
                raise ValueError(f"Shape {t.shape} of a component is incompatible with the "
                                 f"queue '{self._name}' component shape {s}")
        return tensors

    def _op(self, op_type: str, inputs: list, name: Optional[str], **attrs):
        # TF's attrs: enqueues name the types Tcomponents, dequeues component_types
        if "Enqueue" in op_type:
            attrs["Tcomponents"] = [t.dtype for t in inputs]
        elif "Dequeue" in op_type:
            attrs["component_types"] = self._dtypes
        with self._graph.colocate_with(self._queue_ref.op):
            return self._graph.create_op(op_type, [self._queue_ref] + inputs, attrs,
                                         name=name or op_type)

    def enqueue(self, vals, name=None):
        return self._op("QueueEnqueueV2", self._components(vals, False), name or
                        f"{self._name}_enqueue", timeout_ms=-1)

    def enqueue_many(self, vals, name=None):
        return self._op("QueueEnqueueManyV2", self._components(vals, True), name or
                        f"{self._name}_EnqueueMany", timeout_ms=-1)

    def _unpack(self, outputs):
        outs = list(outputs)
        if self._names is not None:
            return dict(zip(self._names, outs))
        return outs[0] if len(outs) == 1 else outs

    def dequeue(self, name=None):
        op = self._op("QueueDequeueV2", [], name or f"{self._name}_Dequeue", timeout_ms=-1)
        return self._unpack(op.outputs)

    def dequeue_many(self, n, name=None):
        count = convert_to_tensor(n, dtype=dtypes_lib.int32)
        op = self._op("QueueDequeueManyV2", [count], name or f"{self._name}_DequeueMany",
                      timeout_ms=-1)
        return self._unpack(op.outputs)

    def dequeue_up_to(self, n, name=None):
        """Like dequeue_many, but once the queue is closed it gives the rest (at least
        one element) instead of failing; OutOfRangeError when none is left."""
        count = convert_to_tensor(n, dtype=dtypes_lib.int32)
        op = self._op("QueueDequeueUpToV2", [count], name or f"{self._name}_DequeueUpTo",
                      timeout_ms=-1)
        return self._unpack(op.outputs)

    def size(self, name=None):
        return self._op("QueueSizeV2", [], name or f"{self._name}_Size").outputs[0]

    def close(self, cancel_pending_enqueues: bool = False, name=None):
        return self._op("QueueCloseV2", [], name or f"{self._name}_Close",
                        cancel_pending_enqueues=cancel_pending_enqueues)


class RandomShuffleQueue(FIFOQueue):
    """A queue that dequeues its elements in a random order (tf.RandomShuffleQueue).

    Until it is closed, a dequeue waits while it would leave fewer than
    `min_after_dequeue` elements, so what comes out is mixed; seeds follow
    the graph and op seed rule of `ops/random.py`.

    Example:
      >>> q = RandomShuffleQueue(10, 2, [float32], shapes=[[]])
      >>> q.queue_ref.op.type
      'RandomShuffleQueueV2'
    """

    _op_type = "RandomShuffleQueueV2"

    def __init__(self, capacity: int, min_after_dequeue: int, dtypes, shapes=None,
                 names=None, seed: Optional[int] = None, shared_name: Optional[str] = None,
                 name: str = "random_shuffle_queue") -> None:
        seed1, seed2 = get_seed(seed)
        super().__init__(capacity, dtypes, shapes, names, shared_name, name,
                         _attrs={"min_after_dequeue": int(min_after_dequeue),
                                 "seed": seed1 or 0, "seed2": seed2 or 0})
        self._min_after_dequeue = int(min_after_dequeue)

    min_after_dequeue = property(lambda self: self._min_after_dequeue)
