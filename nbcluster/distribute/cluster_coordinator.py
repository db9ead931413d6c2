"""ClusterCoordinator: schedules traced functions on whichever worker is free.

TF2's coordinator over TF1-style sessions: `schedule` queues a closure and
returns a RemoteValue at once; a thread per worker (worker_threads.py) runs
closures there; failure_handling.py tells a failed worker (its closures run
again elsewhere, and on it once it is back) from a failed ps (an error).
"""
from __future__ import annotations

import threading
from typing import Optional

from nbcluster.distribute.closures import Closure, ClosureQueue
from nbcluster.distribute.failure_handling import PROBE_TIMEOUT_S, ClusterHealth
from nbcluster.distribute.parameter_server_strategy import ParameterServerStrategy
from nbcluster.distribute.remote_value import RemoteValue
from nbcluster.distribute.values import PerWorkerDataset, PerWorkerValues
from nbcluster.distribute.worker_threads import WorkerThread, _fetchable, _numpy_outputs
from nbcluster.framework.operation import Tensor
from nbcluster.function import ConcreteFunction, Function, flatten, pack_as
from nbcluster.progress import Progress

_PROGRESS_DELAY_S = 0.5  # a join quicker than this shows no progress bar
_PROGRESS_TICK_S = 0.1


class ClusterCoordinator:
    """Runs scheduled `tf.function`s on the workers of a ParameterServerStrategy.

    One coordinator per strategy: creating a second returns the first.
    Args:
      strategy: a ParameterServerStrategy.
    Raises:
      ValueError: `strategy` is not a ParameterServerStrategy.
      UnavailableError: a ps task does not answer.
    Example:
      >>> coordinator = ClusterCoordinator(strategy)  # doctest: +SKIP
      >>> result = coordinator.schedule(step, args=(iter(dataset),))  # doctest: +SKIP
      >>> coordinator.join(); result.fetch()  # doctest: +SKIP
    """

    def __new__(cls, strategy):
        existing = getattr(strategy, "_coordinator", None)
        if existing is not None and not existing._closed:
            return existing
        return super().__new__(cls)

    def __init__(self, strategy) -> None:
        if getattr(self, "_started", False):
            return
        if not isinstance(strategy, ParameterServerStrategy):
            raise ValueError(f"Only tf.distribute.experimental.ParameterServerStrategy works "
                             f"with ClusterCoordinator, got {strategy!r}")
        self._started = True
        self._closed = False
        self._strategy = strategy
        targets = strategy.worker_targets()
        self._queue = ClosureQueue(len(targets))
        self._health = ClusterHealth(strategy._spec, PROBE_TIMEOUT_S)
        self._stopped = threading.Event()
        self._workers = [WorkerThread(i, target, strategy, self._queue, self._health,
                                      self._stopped)
                         for i, target in enumerate(targets)]
        self._joined = 0  # the queue's `scheduled` count at the last join
        strategy._coordinator = self

    strategy = property(lambda self: self._strategy)

    @property
    def num_workers(self) -> int:
        return len(self._workers)

    @property
    def closures_retried(self) -> int:
        """How many closures ran again after their worker failed (the at-least-once slack)."""
        return self._queue.retried

    def schedule(self, fn, args=None, kwargs=None) -> RemoteValue:
        """Queues `fn(*args, **kwargs)` to run on a free worker.

        Args:
          fn: a `tf.function`.
          args, kwargs: numpy values, Python values, per-worker values (each
            worker gets its own; a per-worker iterator gives the function an
            iterator it calls `next()` on) and RemoteValues (their results).
        Returns: a RemoteValue, at once.
        Raises:
          TypeError: `fn` is not a tf.function, or an argument is a graph tensor.
          OpError: a closure scheduled earlier failed (raised once).
        """
        if isinstance(fn, ConcreteFunction) or not isinstance(fn, Function):
            raise TypeError(f"ClusterCoordinator.schedule only accepts a tf.function, got "
                            f"{fn!r}")
        args, kwargs = tuple(args or ()), dict(kwargs or {})
        for leaf in flatten((args, kwargs)):
            if isinstance(leaf, Tensor) or hasattr(leaf, "_as_graph_element"):
                raise TypeError(f"A scheduled function's arguments must be values, not the "
                                f"graph element {leaf!r}: capture it in the function instead")
            if isinstance(leaf, PerWorkerValues) and len(leaf) != self.num_workers:
                raise ValueError(f"{leaf!r} has {len(leaf)} values for {self.num_workers} "
                                 f"workers")
        closure = Closure(fn, args, kwargs)
        if self._closed:
            raise RuntimeError("The ClusterCoordinator was closed.")
        self._queue.put(closure)
        return closure.remote_value

    def join(self) -> None:
        """Blocks until every scheduled function has run.

        A join that lasts over half a second shows a progress bar (functions done
        of those scheduled since the last join) in a notebook, or on a terminal.
        Raises:
          OpError: the first error a scheduled function raised since the last
            join (the functions queued after it were cancelled).
        """
        now = self._queue.scheduled
        scheduled, self._joined = now - self._joined, now
        with Progress(scheduled, "scheduled functions", "done",
                      delay=_PROGRESS_DELAY_S) as progress:
            while not self._queue.wait(_PROGRESS_TICK_S):
                retried = {"retried": self.closures_retried} if self.closures_retried else {}
                progress.set(max(0, scheduled - self._queue.outstanding()), **retried)
            progress.set(scheduled)

    def done(self) -> bool:
        """Whether every scheduled function has run; raises as `join` does."""
        return self._queue.done()

    def fetch(self, val):
        """`val` with RemoteValues replaced by their results (blocking) and
        variables/tensors by their values read on a live worker."""
        leaves = flatten(val)
        graph_leaves = [x for x in leaves if _fetchable(x)]
        values = self._read(graph_leaves) if graph_leaves else []
        read = iter(_numpy_outputs(graph_leaves, values))
        return pack_as(val, [x.fetch() if isinstance(x, RemoteValue) else
                             next(read) if _fetchable(x) else x for x in leaves])

    def _read(self, fetches: list) -> list:
        for worker in self._workers:
            if self._health.is_up(worker.index):
                return worker.read(fetches)
        return self._workers[0].read(fetches)

    def create_per_worker_dataset(self, dataset_fn) -> PerWorkerDataset:
        """Datasets, one per worker: `dataset_fn()` returns a `tf.data.Dataset`, whose
        ops are built on (and run on) each worker, or an iterable of batches (it may
        be a tf.function calling `strategy.distribute_datasets_from_function`).

        Returns: a PerWorkerDataset; `iter()` of it gives per-worker iterators.
        Raises:
          TypeError: `dataset_fn` returned something not iterable.
        """
        return PerWorkerDataset(dataset_fn, self.num_workers, self._strategy)

    def close(self, timeout: Optional[float] = 10.0) -> None:
        """Stops the worker threads; queued functions are cancelled."""
        if self._closed:
            return
        self._closed = True
        self._stopped.set()
        self._queue.close()
        for worker in self._workers:
            worker.join(timeout)
        if getattr(self._strategy, "_coordinator", None) is self:
            self._strategy._coordinator = None

    def __enter__(self) -> "ClusterCoordinator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
