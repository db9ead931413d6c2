"""A worker's tf.data input pipeline: the dataset's ops built pinned to that worker, read
by a session of its own on that worker.

Rule: the pipeline runs on its worker (its ops, map functions and file reads
there); each element comes back to the coordinator's worker thread, which
feeds it to the scheduled function's copy on that worker, so a closure that
runs again elsewhere (a worker failed) still finds its elements. One
`iter()` is one one-shot iterator: a fresh pass over the dataset, as in TF.
"""
from __future__ import annotations

from typing import Iterator

from nbcluster import errors


def worker_device(worker: int) -> str:
    return f"/job:worker/task:{worker}"


def build_for_worker(dataset_fn, strategy, worker: int):
    """`dataset_fn()` called with the strategy's graph as default and ops pinned to
    `worker` (so a tf.data dataset it builds lives there)."""
    graph = strategy.graph
    with strategy.build_lock, graph.as_default(), graph.device(worker_device(worker)):
        return dataset_fn()


class WorkerPipeline:
    """A tf.data dataset built for one worker; iterating reads it on that worker.

    Args:
      dataset: the Dataset, built by `build_for_worker`.
      strategy: its ParameterServerStrategy (the graph, its build lock).
      worker: the worker's task index; target: its `grpc://` target.
    """

    def __init__(self, dataset, strategy, worker: int, target: str) -> None:
        self._dataset = dataset
        self._strategy = strategy
        self._worker = worker
        self._target = target

    def __iter__(self) -> Iterator:
        from nbcluster.data.iterators import make_one_shot_iterator

        strategy = self._strategy
        graph = strategy.graph
        with strategy.build_lock, graph.as_default(), graph.device(worker_device(self._worker)):
            next_element = make_one_shot_iterator(self._dataset).get_next()
        return self._elements(next_element)

    def _elements(self, next_element) -> Iterator:
        from nbcluster.client.session import Session

        session = Session(self._target, graph=self._strategy.graph)
        try:
            while True:
                try:
                    yield session.run(next_element)
                except errors.OutOfRangeError:
                    return
        finally:
            session.close()

    def __repr__(self) -> str:
        return f"<WorkerPipeline on {worker_device(self._worker)}: {self._dataset!r}>"
