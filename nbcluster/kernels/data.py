"""tf.data's dataset kernels: each builds a Dataset value, a Python object of its task
that makes element iterators; the sources and the order-keeping transformations
live here, the function-calling ones in data_transforms.py, the readers in
data_records.py, iterators in data_iterator.py; the Dataset value itself and the
decorator every dataset kernel registers with in dataset_recipe.py (its rule: a
Dataset value is a recipe, never a running pipeline).
"""
from __future__ import annotations

import itertools
import threading

import numpy as np

from nbcluster import errors
from nbcluster.framework import dtypes as dtypes_lib

# The family's other kernels: importing this module (kernels.load_all) registers them all.
from nbcluster.kernels import (  # noqa: F401
    data_functions,
    data_iterator,
    data_records,
    data_transforms,
)
from nbcluster.kernels.dataset_recipe import dataset_kernel, scalar_int


# -- sources ----------------------------------------------------------------------
@dataset_kernel("TensorDataset")
def _tensors(node, device, *components):
    element = tuple(components)
    return lambda env: iter((element,))


@dataset_kernel("TensorSliceDataset")
def _slices(node, device, *components):
    sizes = {np.shape(c)[0] if np.ndim(c) else None for c in components}
    if None in sizes or len(sizes) != 1:
        shapes = ", ".join(str(list(np.shape(c))) for c in components)
        raise errors.InvalidArgumentError(
            None, None, f"All components must have the same size in the 0th dimension "
                        f"to slice them: {shapes}", node_name=node.name)
    rows = sizes.pop()
    return lambda env: (tuple(c[i] for c in components) for i in range(rows))


@dataset_kernel("RangeDataset")
def _range(node, device, start, stop, step):
    start, stop, step = (scalar_int(v, w, node) for v, w in
                         ((start, "start"), (stop, "stop"), (step, "step")))
    if step == 0:
        raise errors.InvalidArgumentError(None, None, "step must be a non-zero integer.",
                                          node_name=node.name)
    dtype = dtypes_lib.as_dtype((node.attrs.get("output_types") or [dtypes_lib.int64])[0])
    return lambda env: ((np.asarray(i, dtype=dtype.as_numpy_dtype),)
                        for i in range(start, stop, step))


# -- order-keeping transformations ---------------------------------------------------
@dataset_kernel("RepeatDataset")
def _repeat(node, device, dataset, count):
    count = scalar_int(count, "count", node)

    def passes(env):
        epochs = itertools.count() if count < 0 else range(count)
        for _ in epochs:
            empty = True
            for element in dataset.iterate(env):
                empty = False
                yield element
            if empty:  # as TF: repeating an empty dataset ends instead of spinning
                return
    return passes


@dataset_kernel("TakeDataset")
def _take(node, device, dataset, count):
    count = scalar_int(count, "count", node)
    return lambda env: (dataset.iterate(env) if count < 0
                        else itertools.islice(dataset.iterate(env), count))


@dataset_kernel("SkipDataset")
def _skip(node, device, dataset, count):
    count = scalar_int(count, "count", node)

    def passes(env):
        it = dataset.iterate(env)
        if count < 0:
            for _ in it:
                pass
            return
        yield from itertools.islice(it, count, None)
    return passes


@dataset_kernel("ShardDataset")
def _shard(node, device, dataset, num_shards, index):
    shards, index = scalar_int(num_shards, "num_shards", node), scalar_int(index, "index", node)
    if shards <= 0 or not 0 <= index < shards:
        raise errors.InvalidArgumentError(
            None, None, f"Index must be between 0 and {shards - 1} (currently index = "
                        f"{index}) and the number of shards must be positive",
            node_name=node.name)
    return lambda env: itertools.islice(dataset.iterate(env), index, None, shards)


@dataset_kernel("CacheDataset")
def _cache(node, device, dataset, filename):
    name = np.asarray(filename).reshape(()).item()
    if name:
        raise errors.UnimplementedError(
            None, None, f"cache() to a file ({name!r}) is not supported; cache() with no "
                        f"file name keeps the elements in memory", node_name=node.name)
    cache: list = []
    complete = threading.Event()
    lock = threading.Lock()

    def passes(env):
        if complete.is_set():  # the first whole pass filled it: replay
            yield from cache
            return
        seen = []
        for element in dataset.iterate(env):
            seen.append(element)
            yield element
        with lock:
            if not complete.is_set():
                cache[:] = seen
                complete.set()
    return passes


@dataset_kernel("UnbatchDataset")
def _unbatch(node, device, dataset):
    def passes(env):
        for element in dataset.iterate(env):
            rows = {np.shape(c)[0] if np.ndim(c) else None for c in element}
            if None in rows or len(rows) != 1:
                raise errors.InvalidArgumentError(
                    None, None, f"Input element must have a non-scalar value in each "
                                f"component, all of the same first dimension; got shapes "
                                f"{[list(np.shape(c)) for c in element]}", node_name=node.name)
            for i in range(rows.pop()):
                yield tuple(c[i] for c in element)
    return passes


@dataset_kernel("ZipDataset")
def _zip(node, device, *datasets):
    def passes(env):
        iterators = [d.iterate(env) for d in datasets]
        for parts in zip(*iterators):
            yield tuple(x for part in parts for x in part)
    return passes


@dataset_kernel("ConcatenateDataset")
def _concatenate(node, device, first, second):
    if first.types != second.types:
        raise errors.InvalidArgumentError(
            None, None, f"input dataset and dataset to concatenate have different types: "
                        f"{[t.name for t in first.types]} and "
                        f"{[t.name for t in second.types]}", node_name=node.name)
    return lambda env: itertools.chain(first.iterate(env), second.iterate(env))


@dataset_kernel("BatchDatasetV2")
def _batch(node, device, dataset, batch_size, drop_remainder):
    size = scalar_int(batch_size, "batch_size", node)
    if size <= 0:
        raise errors.InvalidArgumentError(None, None, f"Batch size must be greater than "
                                                      f"zero, got {size}", node_name=node.name)
    drop = bool(np.asarray(drop_remainder))

    def passes(env):
        for rows in _chunks(dataset.iterate(env), size, drop):
            yield tuple(_stack([r[i] for r in rows], i, node) for i in range(len(rows[0])))
    return passes


def _chunks(iterator, size: int, drop: bool):
    while True:
        rows = list(itertools.islice(iterator, size))
        if not rows or (drop and len(rows) < size):
            return
        yield rows


def _stack(values: list, component: int, node) -> np.ndarray:
    first = np.shape(values[0])
    for i, v in enumerate(values):
        if np.shape(v) != first:
            raise errors.InvalidArgumentError(
                None, None, f"Cannot batch tensors with different shapes in component "
                            f"{component}. First element had shape {list(first)} and "
                            f"element {i} had shape {list(np.shape(v))}.",
                node_name=node.name)
    return np.stack(values)


@dataset_kernel("PaddedBatchDatasetV2")
def _padded_batch(node, device, dataset, batch_size, *rest):
    n = int(node.attrs["N"])
    padded_shapes, padding_values, drop_remainder = rest[:n], rest[n:2 * n], rest[2 * n]
    size = scalar_int(batch_size, "batch_size", node)
    drop = bool(np.asarray(drop_remainder))

    def passes(env):
        for rows in _chunks(dataset.iterate(env), size, drop):
            yield tuple(_pad([r[i] for r in rows], np.asarray(padded_shapes[i]),
                             padding_values[i], i, node) for i in range(n))
    return passes


def _pad(values: list, padded_shape: np.ndarray, pad_value, component: int, node):
    ranks = {np.ndim(v) for v in values}
    if len(ranks) > 1 or ranks.pop() != len(padded_shape):
        raise errors.InvalidArgumentError(
            None, None, f"Number of element dimensions in component {component} does not "
                        f"match the padded shape {padded_shape.tolist()}", node_name=node.name)
    longest = np.max([np.shape(v) for v in values], axis=0) if padded_shape.size else []
    target = [int(m) if p < 0 else int(p) for p, m in zip(padded_shape, longest)]
    out = np.full([len(values)] + target, pad_value, dtype=np.asarray(values[0]).dtype)
    for i, v in enumerate(values):
        v = np.asarray(v)
        if any(d > t for d, t in zip(v.shape, target)):
            raise errors.InvalidArgumentError(
                None, None, f"Attempted to pad to a smaller size than the input element "
                            f"(component {component}: {list(v.shape)} into {target})",
                node_name=node.name)
        out[(i,) + tuple(slice(0, d) for d in v.shape)] = v
    return out


@dataset_kernel("PrefetchDataset")
def _prefetch(node, device, dataset, buffer_size):
    size = scalar_int(buffer_size, "buffer_size", node)
    size = 2 if size < 0 else max(1, size)  # AUTOTUNE (-1): a small fixed buffer here
    return lambda env: _prefetched(dataset.iterate(env), size)


_END = object()


def _prefetched(iterator, size: int):
    """`iterator` pulled ahead on a daemon thread, `size` elements at most; closing
    this generator (a re-initialised iterator, garbage) stops the thread."""
    import queue

    buffer: queue.Queue = queue.Queue(maxsize=size)
    stop = threading.Event()

    def fill() -> None:
        try:
            for element in iterator:
                while not stop.is_set():
                    try:
                        buffer.put(element, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            item = _END
        except Exception as e:  # noqa: BLE001 - handed to the reader, who raises it
            item = e
        while not stop.is_set():
            try:
                buffer.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    threading.Thread(target=fill, daemon=True, name="nbcluster-data-prefetch").start()
    try:
        while True:
            item = buffer.get()
            if item is _END:
                return
            if isinstance(item, Exception):
                raise item
            yield item
    finally:
        stop.set()
