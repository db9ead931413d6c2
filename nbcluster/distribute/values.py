"""Per-worker values: one value per worker, resolved on the worker a closure runs on.

Per-worker datasets are plain Python iterables of numpy batches, iterated in
the coordinator's process: a worker that restarts keeps its iterator (TF
recreates a dataset on a restarted worker; here nothing of it lived there).
"""
from __future__ import annotations

from nbcluster.function import ElementIterator


class PerWorkerValues:
    """One value per worker; a scheduled function gets the one of its worker.

    Args:
      values: a tuple with one value per worker, in worker task order.
    """

    def __init__(self, values) -> None:
        self._values = tuple(values)

    def value_for(self, worker: int):
        return self._values[worker]

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"PerWorkerValues({self._values!r})"


class PerWorkerDistributedIterator(PerWorkerValues):
    """`iter(per_worker_dataset)`: each worker's iterator; a traced function
    calls `next()` on it and gets that worker's next batch, fed to the graph."""

    def __iter__(self) -> "PerWorkerDistributedIterator":
        return self

    def __next__(self):
        raise NotImplementedError("Iterating over a per-worker iterator in the coordinator "
                                  "is not supported: pass it to a scheduled tf.function, "
                                  "which calls next() on it")


class PerWorkerDataset:
    """What `coordinator.create_per_worker_dataset(dataset_fn)` returns.

    Args:
      dataset_fn: called once per worker, returns an iterable of batches
        (numpy arrays or nested tuples/dicts of them); a tf.function (as TF2
        code passes one calling `strategy.distribute_datasets_from_function`),
        whose Python function is called; or an iterable, which every worker
        then iterates on its own.
      num_workers: how many workers.
    Raises:
      TypeError: `dataset_fn` gave something that is not iterable.
    """

    def __init__(self, dataset_fn, num_workers: int) -> None:
        self._datasets = tuple(_dataset(dataset_fn, i) for i in range(num_workers))

    def __iter__(self) -> PerWorkerDistributedIterator:
        return PerWorkerDistributedIterator(ElementIterator(d) for d in self._datasets)

    def __repr__(self) -> str:
        return f"<PerWorkerDataset of {len(self._datasets)} worker(s)>"


def _dataset(dataset_fn, worker: int):
    # TF2 code passes a tf.function (calling strategy.distribute_datasets_from_function):
    # here a dataset lives in the coordinator, so its Python function is what runs
    dataset_fn = getattr(dataset_fn, "python_function", dataset_fn)
    dataset = dataset_fn() if callable(dataset_fn) else dataset_fn
    try:
        iter(dataset)
    except TypeError:
        raise TypeError(f"dataset_fn must return an iterable of batches; for worker "
                        f"{worker} it returned {dataset!r}") from None
    return dataset
