"""Kernels for FIFOQueue and RandomShuffleQueue: a QueueResource per (container, name)
on its task; a RandomShuffleQueue hands out random elements and, until it is closed,
keeps at least `min_after_dequeue` of them."""
from __future__ import annotations

import collections
import threading

import numpy as np

from nbcluster import errors
from nbcluster.kernels.random import generator
from nbcluster.runtime.kernel_table import register_kernel


class QueueResource:
    """A bounded FIFO of component tuples; blocking ops wait on its condition."""

    kind = "FIFOQueue"  # TF's words in errors
    min_after_dequeue = 0

    def __init__(self, name: str, capacity: int, dtypes: list, shapes: list = ()) -> None:
        self.name = name
        self.capacity = capacity if capacity > 0 else 2 ** 62
        self.dtypes = dtypes
        self.shapes = list(shapes)  # empty: any shape per element, as in TF
        self.items: collections.deque = collections.deque()
        self.closed = False
        self.cancelled = False  # closed with cancel_pending_enqueues
        self.cond = threading.Condition()

    def _closed_error(self) -> errors.OpError:
        return errors.CancelledError(None, None, f"{self.kind} '{self.name}' is closed.")

    def check_row(self, row: tuple, node_name: str) -> None:
        for i, (value, shape) in enumerate(zip(row, self.shapes)):
            if not shape.is_compatible_with(value.shape):
                raise errors.InvalidArgumentError(
                    None, None, f"Shape mismatch in tuple component {i}. Expected "
                                f"{shape.as_list()}, got {list(value.shape)}",
                    node_name=node_name)

    def enqueue(self, ctx, rows: list) -> None:
        # TF: a closed queue refuses new enqueues; those already waiting for room
        # still go in unless the close cancelled pending enqueues.
        with self.cond:
            if self.closed:
                raise self._closed_error()
            for row in rows:
                ctx.wait(self.cond, lambda: self.cancelled or len(self.items) < self.capacity,
                         f"room in queue {self.name}")
                if self.cancelled:
                    raise self._closed_error()
                self.items.append(row)
                self.cond.notify_all()

    def dequeue(self, ctx, n: int, up_to: bool = False) -> list:
        """`n` rows; once closed, fewer if `up_to` (at least one), else OutOfRangeError."""
        with self.cond:
            ctx.wait(self.cond, lambda: len(self.items) >= n + self.min_after_dequeue
                     or self.closed, f"{n} element(s) of queue {self.name}")
            if len(self.items) < n and not (up_to and self.items):
                raise errors.OutOfRangeError(
                    None, None, f"{self.kind} '{self.name}' is closed and has insufficient "
                                f"elements (requested {n}, current size {len(self.items)})")
            rows = [self._take() for _ in range(min(n, len(self.items)))]
            self.cond.notify_all()
            return rows

    def _take(self) -> tuple:
        return self.items.popleft()

    def close(self, cancel_pending_enqueues: bool = False) -> None:
        with self.cond:
            self.closed = True
            self.cancelled = self.cancelled or cancel_pending_enqueues
            self.cond.notify_all()

    def cancel_all(self) -> None:
        self.close(cancel_pending_enqueues=True)


class RandomShuffleQueueResource(QueueResource):
    """Dequeues take random elements; until closed, `min_after_dequeue` stay behind."""

    kind = "RandomShuffleQueue"

    def __init__(self, name: str, capacity: int, dtypes: list, shapes: list,
                 min_after_dequeue: int, rng: np.random.Generator) -> None:
        super().__init__(name, capacity, dtypes, shapes)
        self.items = []  # random removal: swap with the last, then pop
        self.min_after_dequeue = max(0, min_after_dequeue)
        self.rng = rng

    def close(self, cancel_pending_enqueues: bool = False) -> None:
        with self.cond:
            self.min_after_dequeue = 0  # as TF: a closed queue gives out what it holds
        super().close(cancel_pending_enqueues)

    def _take(self) -> tuple:
        i = int(self.rng.integers(len(self.items)))
        self.items[i], self.items[-1] = self.items[-1], self.items[i]
        return self.items.pop()


def _queue_kernel(make):
    def factory(node, device):
        container = node.attrs.get("container") or None
        name = node.attrs.get("shared_name") or node.name
        capacity = int(node.attrs.get("capacity", -1))
        dtypes = list(node.attrs["component_types"])
        shapes = list(node.attrs.get("shapes") or [])

        def queue(ctx):
            return (ctx.resources.lookup_or_create(
                container or ctx.default_container, name,
                lambda: make(node, capacity, dtypes, shapes), QueueResource),)
        return queue
    return factory


register_kernel("FIFOQueueV2", "CPU")(_queue_kernel(
    lambda node, capacity, dtypes, shapes: QueueResource(node.name, capacity, dtypes, shapes)))
register_kernel("RandomShuffleQueueV2", "CPU")(_queue_kernel(
    lambda node, capacity, dtypes, shapes: RandomShuffleQueueResource(
        node.name, capacity, dtypes, shapes, int(node.attrs.get("min_after_dequeue", 0)),
        generator(node))))


def _cast(values, dtypes) -> tuple:
    return tuple(np.asarray(v, dtype=d.as_numpy_dtype) for v, d in zip(values, dtypes))


@register_kernel("QueueEnqueueV2", "CPU")
def _enqueue(node, device):
    def enqueue(ctx, queue, *components):
        row = _cast(components, queue.dtypes)
        queue.check_row(row, node.name)
        queue.enqueue(ctx, [row])
        return ()
    return enqueue


@register_kernel("QueueEnqueueManyV2", "CPU")
def _enqueue_many(node, device):
    def enqueue_many(ctx, queue, *components):
        sizes = {len(c) for c in components}
        if len(sizes) != 1:
            raise errors.InvalidArgumentError(
                None, None, f"Components of enqueue_many must have equal first dimensions, "
                            f"got {sorted(sizes)}", node_name=node.name)
        rows = [_cast([c[i] for c in components], queue.dtypes) for i in range(sizes.pop())]
        for row in rows:
            queue.check_row(row, node.name)
        queue.enqueue(ctx, rows)
        return ()
    return enqueue_many


@register_kernel("QueueDequeueV2", "CPU")
def _dequeue(node, device):
    def dequeue(ctx, queue):
        return queue.dequeue(ctx, 1)[0]
    return dequeue


def _dequeue_batch(up_to: bool):
    def factory(node, device):
        def dequeue_many(ctx, queue, n):
            if not queue.shapes:
                raise errors.InvalidArgumentError(
                    None, None, f"{queue.kind}'s DequeueMany and DequeueUpTo require the "
                                f"components to have specified shapes.", node_name=node.name)
            if int(n) < 0:
                raise errors.InvalidArgumentError(
                    None, None, f"{node.op}: requested {int(n)} elements", node_name=node.name)
            rows = queue.dequeue(ctx, int(n), up_to)
            return tuple(np.stack([r[i] for r in rows]) if rows else
                         np.zeros([0] + s.as_list(), dtype=d.as_numpy_dtype)
                         for i, (d, s) in enumerate(zip(queue.dtypes, queue.shapes)))
        return dequeue_many
    return factory


register_kernel("QueueDequeueManyV2", "CPU")(_dequeue_batch(up_to=False))
register_kernel("QueueDequeueUpToV2", "CPU")(_dequeue_batch(up_to=True))


@register_kernel("QueueSizeV2", "CPU")
def _size(node, device):
    def size(ctx, queue):
        return (np.asarray(len(queue.items), dtype=np.int32),)
    return size


@register_kernel("QueueCloseV2", "CPU")
def _close(node, device):
    cancel = bool(node.attrs.get("cancel_pending_enqueues", False))

    def close(ctx, queue):
        queue.close(cancel)
        return ()
    return close
