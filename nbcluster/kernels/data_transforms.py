"""The dataset kernels that call a function (map, filter, interleave), shuffle, and
from_generator's source.

Rule: a function-calling kernel plans its function once, when the node is
planned (data_functions.FunctionRunner), on the node's own device.
"""
from __future__ import annotations

import collections
import itertools
import os
import threading
import uuid
from typing import Callable

import numpy as np

from nbcluster import errors
from nbcluster.kernels.data_functions import FunctionRunner
from nbcluster.kernels.dataset_recipe import Dataset, dataset_kernel, scalar_int, signature
from nbcluster.runtime.kernel_table import register_kernel
from nbcluster.runtime.thread_pool import DaemonPool

_POOL = DaemonPool(max_workers=32, thread_name_prefix="nbcluster-data-map")


def function_kernel(op_type: str, attr: str, tail: int = 0):
    """Registers `make(node, device, runner, dataset, captured, *tail_inputs) -> passes`;
    `tail` scalar inputs follow the captured ones (a parallel map's call count)."""

    def wrap(make: Callable) -> Callable:
        @register_kernel(op_type, "CPU")
        def factory(node, device):
            types, shapes = signature(node)
            runner = FunctionRunner(node.attrs[attr], device, node.name)
            captures = len(node.attrs.get("Targuments") or [])

            def compute(ctx, dataset, *inputs):
                captured = tuple(inputs[:captures])
                passes = make(node, device, runner, dataset, captured, *inputs[captures:])
                return (Dataset(types, shapes, passes),)
            return compute
        return make
    return wrap


def _outputs(values: tuple) -> tuple:
    return tuple(v if isinstance(v, Dataset) else np.asarray(v) for v in values)


@function_kernel("MapDataset", "f")
def _map(node, device, runner, dataset, captured):
    return lambda env: (_outputs(runner.call(env, element + captured))
                        for element in dataset.iterate(env))


@function_kernel("ParallelMapDatasetV2", "f", tail=1)
def _parallel_map(node, device, runner, dataset, captured, num_parallel_calls):
    calls = scalar_int(num_parallel_calls, "num_parallel_calls", node)
    calls = (os.cpu_count() or 1) if calls < 0 else max(1, calls)  # AUTOTUNE is -1

    def passes(env):
        # Up to `calls` elements in flight on pool threads, handed out in input order.
        pending: collections.deque = collections.deque()
        for element in dataset.iterate(env):
            pending.append(_POOL.submit(runner.call, env, element + captured))
            if len(pending) >= calls:
                yield _outputs(pending.popleft().result())
        while pending:
            yield _outputs(pending.popleft().result())
    return passes


@function_kernel("FilterDataset", "predicate")
def _filter(node, device, runner, dataset, captured):
    def keep(env, element) -> bool:
        (result,) = runner.call(env, element + captured)
        result = np.asarray(result)
        if result.shape != () or result.dtype != np.bool_:
            raise errors.InvalidArgumentError(
                None, None, f"Filter predicate `predicate` must return a scalar bool, got "
                            f"{result.dtype} of shape {list(result.shape)}",
                node_name=node.name)
        return bool(result)
    return lambda env: (e for e in dataset.iterate(env) if keep(env, e))


@function_kernel("InterleaveDataset", "f", tail=2)
def _interleave(node, device, runner, dataset, captured, cycle_length, block_length):
    cycle = scalar_int(cycle_length, "cycle_length", node)
    cycle = (os.cpu_count() or 1) if cycle < 0 else cycle
    block = scalar_int(block_length, "block_length", node)
    if cycle <= 0 or block <= 0:
        raise errors.InvalidArgumentError(
            None, None, f"cycle_length ({cycle}) and block_length ({block}) must be positive",
            node_name=node.name)
    return lambda env: _interleaved(env, runner, dataset, captured, cycle, block, node)


@function_kernel("FlatMapDataset", "f")
def _flat_map(node, device, runner, dataset, captured):
    return lambda env: _interleaved(env, runner, dataset, captured, 1, 1, node)


def _interleaved(env, runner, dataset, captured, cycle: int, block: int, node):
    """TF's order: `cycle` open inner datasets, `block` elements from each in turn; an
    empty slot is refilled from the next input element before it is read."""
    inputs = dataset.iterate(env)
    slots: list = [None] * cycle
    index = taken = is_open = 0
    ended = False
    while not ended or is_open:
        if slots[index] is not None:
            element = next(slots[index], None)
            if element is not None:
                yield element
                taken += 1
                if taken < block:
                    continue
            else:
                slots[index] = None
                is_open -= 1
        elif not ended:
            element = next(inputs, None)
            if element is None:
                ended = True
            else:
                inner = runner.call(env, element + captured)
                if len(inner) != 1 or not isinstance(inner[0], Dataset):
                    raise errors.InvalidArgumentError(
                        None, None, "The interleave function must return a single dataset",
                        node_name=node.name)
                slots[index] = inner[0].iterate(env)
                is_open += 1
            continue
        index, taken = (index + 1) % cycle, 0


# -- shuffle ---------------------------------------------------------------------------
@register_kernel("DummySeedGenerator", "CPU")
def _dummy_seed_generator(node, device):
    return lambda ctx: (None,)  # ShuffleDatasetV3 takes its seeds from its own inputs


@dataset_kernel("ShuffleDatasetV3")
def _shuffle_v3(node, device, dataset, buffer_size, seed, seed2, seed_generator):
    return _shuffle(node, device, dataset, buffer_size, seed, seed2)


@dataset_kernel("ShuffleDataset")
def _shuffle(node, device, dataset, buffer_size, seed, seed2):
    size = scalar_int(buffer_size, "buffer_size", node)
    if size <= 0:
        raise errors.InvalidArgumentError(
            None, None, f"buffer_size must be greater than zero, got {size}",
            node_name=node.name)
    seeds = [scalar_int(seed, "seed", node), scalar_int(seed2, "seed2", node)]
    reshuffle = bool(node.attrs.get("reshuffle_each_iteration", True))
    epochs = itertools.count()
    lock = threading.Lock()

    def passes(env):
        with lock:
            epoch = next(epochs)
        if seeds == [0, 0]:
            rng = np.random.default_rng()
        else:  # seeded: the same orders every run; a new one each pass if `reshuffle`
            rng = np.random.default_rng([s % 2 ** 63 for s in seeds] + ([epoch] if reshuffle
                                                                         else []))
        return _shuffled(dataset.iterate(env), size, rng)
    return passes


def _shuffled(iterator, size: int, rng):
    buffer = list(itertools.islice(iterator, size))
    while buffer:
        i = int(rng.integers(len(buffer)))
        yield buffer[i]
        refill = next(iterator, None)
        if refill is not None:
            buffer[i] = refill
        else:
            buffer[i] = buffer[-1]
            buffer.pop()


# -- from_generator --------------------------------------------------------------------
# token -> a callable giving an iterable of flat element tuples. Process-local, as TF's
# py_func registry: the generator runs only in the process that built the dataset.
_GENERATORS: dict = {}
_TOKENS = itertools.count()


def register_generator(flat_generator: Callable) -> str:
    """Registers `flat_generator` (no arguments -> iterable of flat element lists);
    returns the token a GeneratorDataset names it by."""
    token = f"generator:{os.getpid()}:{uuid.uuid4().hex[:12]}:{next(_TOKENS)}"
    _GENERATORS[token] = flat_generator
    return token


@dataset_kernel("GeneratorDataset")
def _generator(node, device):
    token = node.attrs["token"]
    types, shapes = signature(node)
    make = _GENERATORS.get(token)
    if make is None:
        raise errors.FailedPreconditionError(
            None, None, f"from_generator's generator ({token}) is not in this process: a "
                        f"generator runs in the process that built the dataset, so place "
                        f"its pipeline on a task of that process", node_name=node.name)

    def passes(env):
        for values in make():
            yield tuple(_generated(v, t, s, node) for v, t, s in zip(values, types, shapes))
    return passes


def _generated(value, dtype, shape, node) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=dtype.as_numpy_dtype)
    except (TypeError, ValueError):
        raise errors.InvalidArgumentError(
            None, None, f"TypeError: `generator` yielded an element that could not be "
                        f"converted to the expected type. The expected type was "
                        f"{dtype.name}, but the yielded element was {value!r}.",
            node_name=node.name) from None
    if not shape.is_compatible_with(array.shape):
        raise errors.InvalidArgumentError(
            None, None, f"`generator` yielded an element of shape {array.shape} where an "
                        f"element of shape {shape} was expected.",
            node_name=node.name)
    return array
