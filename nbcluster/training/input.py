"""Queue-based input (tf.train's input producers and batchers), as TF1 builds it.

Rule: every producer and batcher is a queue plus a QueueRunner in the graph's
QUEUE_RUNNERS collection, so `start_queue_runners` (or a MonitoredSession)
fills it. `num_epochs` counts the passes in a local variable ("epochs", run
`local_variables_initializer`) through CountUpTo; when it reaches the limit
the producer's runner ends on OutOfRangeError and closes its queue, the
batcher's runner then drains it and closes its own, and the reader's next run
fails with OutOfRangeError: the TF1 end of input. TF's `fraction_of_N_full`
summaries are not made here.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.ops.array import identity
from nbcluster.ops.fill import zeros
from nbcluster.ops.indexing import gather
from nbcluster.ops.queue import FIFOQueue, RandomShuffleQueue
from nbcluster.ops.random import random_shuffle
from nbcluster.ops.ranges import range as range_
from nbcluster.ops.shapes import shape as shape_of
from nbcluster.ops.state import LOCAL_VARIABLES, Variable, count_up_to
from nbcluster.training.queue_runner import QueueRunner, add_queue_runner


def limit_epochs(tensor, num_epochs: Optional[int] = None, name: Optional[str] = None):
    """`tensor`, `num_epochs` times; the next run fails with OutOfRangeError.

    Raises:
      ValueError: num_epochs <= 0.
    """
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    graph = get_default_graph()
    with graph.name_scope(name or "limit_epochs") as scope:
        epochs = Variable(zeros([], dtype=dtypes.int64), name="epochs", trainable=False,
                          collections=[LOCAL_VARIABLES])
        counter = count_up_to(epochs, num_epochs)
        with graph.control_dependencies([counter]):
            return identity(tensor, name=scope)


def input_producer(input_tensor, element_shape=None, num_epochs: Optional[int] = None,
                   shuffle: bool = True, seed: Optional[int] = None, capacity: int = 32,
                   shared_name: Optional[str] = None, summary_name: Optional[str] = None,
                   name: Optional[str] = None, cancel_op=None) -> FIFOQueue:
    """A queue holding the rows of `input_tensor`, refilled pass after pass.

    Args:
      input_tensor: the rows to produce (first dimension), e.g. file names.
      element_shape: a row's shape where `input_tensor`'s is not fully known.
      num_epochs: the passes to make (None: forever).
      shuffle: shuffle the rows of each pass (op RandomShuffle, `seed`).
      capacity, shared_name: the FIFOQueue's.
      summary_name: accepted for TF's signature (no summary is made).
      cancel_op: the runner's cancel op (default: the queue's cancelling close).
    Returns: the FIFOQueue; its `dequeue()` gives one row.
    Raises:
      ValueError: the row shape is not fully defined.
    Example:
      >>> q = input_producer(constant([[1, 2], [3, 4]]), num_epochs=1, shuffle=False)
    """
    del summary_name
    graph = get_default_graph()
    with graph.name_scope(name or "input_producer"):
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        rows = input_tensor.shape[1:] if input_tensor.shape.rank is not None \
            else TensorShape(None)
        element_shape = rows.merge_with(TensorShape(element_shape))
        if not element_shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape or "
                             "`element_shape` must be specified")
        if shuffle:
            input_tensor = random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        queue = FIFOQueue(capacity, [input_tensor.dtype], shapes=[element_shape],
                          shared_name=shared_name, name=name or "fifo_queue")
        enqueue = queue.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(queue, [enqueue], cancel_op=cancel_op))
        return queue


def string_input_producer(string_tensor, num_epochs: Optional[int] = None,
                          shuffle: bool = True, seed: Optional[int] = None,
                          capacity: int = 32, shared_name: Optional[str] = None,
                          name: Optional[str] = None, cancel_op=None) -> FIFOQueue:
    """A queue of strings (file names, as TF1 readers take them); see input_producer.

    Raises:
      ValueError: an empty list of strings.
    """
    if not isinstance(string_tensor, Tensor) and not len(string_tensor):
        raise ValueError("string_input_producer requires a non-null input tensor")
    strings = convert_to_tensor(string_tensor, dtype=dtypes.string)
    return input_producer(strings, [], num_epochs, shuffle, seed, capacity, shared_name,
                          name=name, cancel_op=cancel_op)


def range_input_producer(limit, num_epochs: Optional[int] = None, shuffle: bool = True,
                         seed: Optional[int] = None, capacity: int = 32,
                         shared_name: Optional[str] = None,
                         name: Optional[str] = None) -> FIFOQueue:
    """A queue of the integers 0 .. limit-1 (int32), pass after pass; see input_producer."""
    return input_producer(range_(limit), [], num_epochs, shuffle, seed, capacity,
                          shared_name, name=name)


def slice_input_producer(tensor_list, num_epochs: Optional[int] = None,
                         shuffle: bool = True, seed: Optional[int] = None,
                         capacity: int = 32, shared_name: Optional[str] = None,
                         name: Optional[str] = None) -> list:
    """One row of each tensor of `tensor_list` at a time, the same row of each.

    Returns: a list with one row tensor per input tensor.
    Raises:
      ValueError: an empty `tensor_list`.
    """
    graph = get_default_graph()
    with graph.name_scope(name or "input_producer"):
        tensors = [convert_to_tensor(t) for t in tensor_list]
        if not tensors:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        queue = range_input_producer(shape_of(tensors[0])[0], num_epochs, shuffle, seed,
                                     capacity, shared_name)
        index = queue.dequeue()
        return [gather(t, index) for t in tensors]


# -- batching ----------------------------------------------------------------------
def _as_list(tensors) -> list:
    if isinstance(tensors, dict):
        return [tensors[k] for k in sorted(tensors)]
    if isinstance(tensors, (list, tuple)):
        return list(tensors)
    return [tensors]


def _as_original(tensors, dequeued):
    if isinstance(tensors, dict):
        values = [dequeued] if len(tensors) == 1 else list(dequeued)
        return {k: values[i] for i, k in enumerate(sorted(tensors))}
    return dequeued


def _queue_shapes(tensors: list, shapes, enqueue_many: bool) -> list:
    if shapes is not None:
        return [TensorShape(s) for s in shapes]
    out = [t.shape[1:] if enqueue_many and t.shape.rank is not None else
           (TensorShape(None) if enqueue_many else t.shape) for t in tensors]
    if not all(s.is_fully_defined() for s in out):
        raise ValueError(f"All shapes must be fully defined: {out}")
    return out


def _batch(queue_of, tensors, batch_size, num_threads, enqueue_many, shapes,
           allow_smaller_final_batch, name, default_name: str):
    graph = get_default_graph()
    with graph.name_scope(name or default_name) as scope:
        tensor_list = [convert_to_tensor(t) for t in _as_list(tensors)]
        if not tensor_list:
            raise ValueError(f"Expected at least one tensor in {default_name}().")
        queue = queue_of([t.dtype for t in tensor_list],
                         _queue_shapes(tensor_list, shapes, enqueue_many))
        enqueue = (queue.enqueue_many if enqueue_many else queue.enqueue)(tensor_list)
        add_queue_runner(QueueRunner(queue, [enqueue] * num_threads))
        take = queue.dequeue_up_to if allow_smaller_final_batch else queue.dequeue_many
        return _as_original(tensors, take(batch_size, name=scope))


def batch(tensors, batch_size: int, num_threads: int = 1, capacity: int = 32,
          enqueue_many: bool = False, shapes=None, dynamic_pad: bool = False,
          allow_smaller_final_batch: bool = False, shared_name: Optional[str] = None,
          name: Optional[str] = None):
    """Batches of `tensors` (a list or dict) through a FIFOQueue of `capacity`.

    Args:
      tensors: one example (or, with `enqueue_many`, a batch of them).
      batch_size: rows per dequeued batch.
      num_threads: runner threads enqueuing `tensors`.
      shapes: per-tensor example shapes where not fully known.
      dynamic_pad: not supported (raises).
      allow_smaller_final_batch: the last batch may be short (DequeueUpTo).
    Returns: the batched tensors, of `tensors`' structure (one tensor gives one).
    Raises:
      ValueError: no tensors, or an example shape that is not fully defined.
      NotImplementedError: dynamic_pad.
    Example:
      >>> x_batch, y_batch = batch([x, y], batch_size=32)  # doctest: +SKIP
    """
    if dynamic_pad:
        raise NotImplementedError("batch(dynamic_pad=True) needs a PaddingFIFOQueue, which "
                                  "nbcluster does not have")

    def queue_of(types, queue_shapes):
        return FIFOQueue(capacity, types, shapes=queue_shapes, shared_name=shared_name)
    return _batch(queue_of, tensors, batch_size, num_threads, enqueue_many, shapes,
                  allow_smaller_final_batch, name, "batch")


def shuffle_batch(tensors, batch_size: int, capacity: int, min_after_dequeue: int,
                  num_threads: int = 1, seed: Optional[int] = None,
                  enqueue_many: bool = False, shapes=None,
                  allow_smaller_final_batch: bool = False,
                  shared_name: Optional[str] = None, name: Optional[str] = None):
    """Like batch, through a RandomShuffleQueue keeping `min_after_dequeue` examples
    behind each dequeue (until the input ends), so batches mix examples.

    Raises:
      ValueError: capacity <= min_after_dequeue, or as batch.
    """
    if capacity <= min_after_dequeue:
        raise ValueError(f"capacity {capacity} must be bigger than min_after_dequeue "
                         f"{min_after_dequeue}.")

    def queue_of(types, queue_shapes):
        return RandomShuffleQueue(capacity, min_after_dequeue, types, shapes=queue_shapes,
                                  seed=seed, shared_name=shared_name)
    return _batch(queue_of, tensors, batch_size, num_threads, enqueue_many, shapes,
                  allow_smaller_final_batch, name, "shuffle_batch")


__all__ = ["batch", "input_producer", "limit_epochs", "range_input_producer",
           "shuffle_batch", "slice_input_producer", "string_input_producer"]
