"""Per-worker values: one value per worker, resolved on the worker a closure runs on.

A per-worker dataset is a tf.data Dataset, built once per worker with its ops
pinned to that worker and read there (worker_pipeline.py), or a plain Python
iterable of numpy batches, iterated in the coordinator's process (a worker
that restarts keeps such an iterator: nothing of it lived there).
"""
from __future__ import annotations

from nbcluster.distribute.worker_pipeline import WorkerPipeline, build_for_worker
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
      dataset_fn: called once per worker, returns a `tf.data.Dataset` (built
        on that worker) or an iterable of batches (numpy arrays or nested
        tuples/dicts of them); a tf.function (as TF2 code passes one calling
        `strategy.distribute_datasets_from_function`), whose Python function
        is called; or an iterable, which every worker then iterates on its own.
      num_workers: how many workers.
      strategy: the ParameterServerStrategy, whose graph a tf.data dataset is
        built into (None: iterables only).
    Raises:
      TypeError: `dataset_fn` gave something that is not iterable.
    """

    def __init__(self, dataset_fn, num_workers: int, strategy=None) -> None:
        self._datasets = tuple(_dataset(dataset_fn, i, strategy) for i in range(num_workers))

    def __iter__(self) -> PerWorkerDistributedIterator:
        return PerWorkerDistributedIterator(ElementIterator(d) for d in self._datasets)

    def __repr__(self) -> str:
        return f"<PerWorkerDataset of {len(self._datasets)} worker(s)>"


def _dataset(dataset_fn, worker: int, strategy=None):
    from nbcluster.data.dataset import Dataset

    # TF2 code passes a tf.function (calling strategy.distribute_datasets_from_function):
    # its Python function is what runs, building a tf.data dataset on the worker
    dataset_fn = getattr(dataset_fn, "python_function", dataset_fn)
    if not callable(dataset_fn):
        dataset = dataset_fn
    elif strategy is not None:
        dataset = build_for_worker(dataset_fn, strategy, worker)
    else:
        dataset = dataset_fn()
    if isinstance(dataset, Dataset):
        if strategy is None:
            raise TypeError("a tf.data dataset needs the strategy to build it on a worker")
        return WorkerPipeline(dataset, strategy, worker, strategy.worker_targets()[worker])
    try:
        iter(dataset)
    except TypeError:
        raise TypeError(f"dataset_fn must return an iterable of batches; for worker "
                        f"{worker} it returned {dataset!r}") from None
    return dataset
