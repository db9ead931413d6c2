"""One thread per worker: runs closures in a Session on that worker, recovers when it fails.

Rule: only a worker's thread runs closures on that worker (the coordinator
may read variables through the same Session); graph building (traces,
per-worker copies, initializers) happens under the strategy's build lock,
since a Graph's scopes are not per thread.
"""
from __future__ import annotations

import threading
from typing import Optional

from nbcluster import errors
from nbcluster.client.session import Session
from nbcluster.distribute.closures import Closure, ClosureQueue
from nbcluster.distribute.failure_handling import ClusterHealth, handle_closure_error
from nbcluster.distribute.remote_value import RemoteValue
from nbcluster.distribute.values import PerWorkerValues
from nbcluster.framework.operation import Operation, Tensor
from nbcluster.function import flatten, pack_as


class WorkerThread:
    """Takes closures from `queue` and runs them on worker task `index`."""

    def __init__(self, index: int, target: str, strategy, queue: ClosureQueue,
                 health: ClusterHealth, stopped: threading.Event) -> None:
        self.index = index
        self.target = target
        self.device = f"/job:worker/replica:0/task:{index}"
        self._strategy = strategy
        self._queue = queue
        self._health = health
        self._stopped = stopped
        self._session: Optional[Session] = None
        self._session_lock = threading.Lock()
        self._instances: dict = {}  # id(ConcreteFunction) -> (concrete, Instance)
        self.failures = 0
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name=f"nbcluster-coordinator-worker-{index}")
        self._thread.start()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    # -- the loop ------------------------------------------------------------
    def _loop(self) -> None:
        try:
            self._serve()
        finally:
            self._drop_session()

    def _serve(self) -> None:
        if not self._health.is_up(self.index) and not self._recover():
            return
        while True:
            closure = self._queue.get(self.index)
            if closure is None:
                return
            try:
                value = self._run(closure)
            except _RanDry as e:  # another worker may still have data for it
                self._queue.ran_dry(closure, self.index, e.error)
            except errors.OpError as e:
                if not self._on_error(closure, e):
                    return
            except Exception as e:  # noqa: BLE001 - the user's function raised while tracing
                self._queue.mark_failed(closure, e)
            else:
                self._queue.mark_finished(closure, value)

    def _on_error(self, closure: Closure, error: errors.OpError) -> bool:
        """Fails, or queues again, `closure`; False if the coordinator stopped meanwhile."""
        if handle_closure_error(self._health, self._queue, self.index, closure, error):
            self.failures += 1
            return self._recover()
        return True

    def _recover(self) -> bool:
        """Waits for the worker to answer again; then it gets a fresh Session."""
        with self._session_lock:
            self._session = None  # its master, and the session there, are gone
        if not self._health.wait_until_up(self.index, self._stopped):
            return False
        self._queue.notify()
        return True

    # -- one closure ------------------------------------------------------------
    def _run(self, closure: Closure):
        args, kwargs = self._resolve(closure.args, closure.kwargs)
        strategy = self._strategy
        with strategy.build_lock:
            with strategy.scope():
                try:  # pulls this worker's next batches, if it takes an iterator
                    concrete, values = closure.fn.trace_for_call(strategy.graph, args, kwargs)
                except errors.OutOfRangeError as e:
                    raise _RanDry(e) from None
            found = self._instances.get(id(concrete))
            if found is None:
                instance = concrete.instantiate(
                    device=self.device, name=f"{concrete.name}_worker_{self.index}")
                self._instances[id(concrete)] = (concrete, instance)
            else:
                instance = found[1]
        session = self._session_now()
        self._initialize_variables(session)
        fetches = [x for x in flatten(instance.outputs) if _fetchable(x)]
        feeds = dict(zip(instance.inputs, values))
        results, _ = session.run([fetches, instance.side_effects], feeds)
        return _numpy_outputs(instance.outputs, results)

    def _resolve(self, args: tuple, kwargs: dict) -> tuple:
        def resolve(x):
            if isinstance(x, PerWorkerValues):
                return x.value_for(self.index)
            if isinstance(x, RemoteValue):
                return x.fetch()
            return x
        structure = (args, kwargs)
        return pack_as(structure, [resolve(x) for x in flatten(structure)])

    def _drop_session(self) -> None:
        with self._session_lock:
            session, self._session = self._session, None
        if session is not None:
            try:
                session.close()
            except errors.OpError:  # the worker is gone; nothing to close
                pass

    def _session_now(self) -> Session:
        with self._session_lock:
            if self._session is None:
                self._session = Session(self.target, graph=self._strategy.graph)
            return self._session

    def _initialize_variables(self, session: Session) -> None:
        # Once per variable, whichever worker gets there first; the others wait,
        # since a second initialization would undo the first steps' updates.
        strategy = self._strategy
        with strategy.init_lock:
            with strategy.build_lock:
                init, variables = strategy.uninitialized_variables()
            if init is not None:
                session.run(init)
                strategy.mark_initialized(variables)

    def read(self, fetches):
        """Runs `fetches` (tensors, variables) on this worker, outside any closure."""
        session = self._session_now()
        self._initialize_variables(session)
        return session.run(fetches)


class _RanDry(Exception):
    """A closure's iterator ran out on this worker before anything ran."""

    def __init__(self, error: errors.OutOfRangeError) -> None:
        super().__init__(error.message)
        self.error = error


def _fetchable(x) -> bool:
    return isinstance(x, (Tensor, Operation)) or hasattr(x, "_as_graph_element")


def _numpy_outputs(outputs, results: list):
    values = iter(results)
    leaves = []
    for x in flatten(outputs):
        if _fetchable(x):
            value = next(values)
            leaves.append(None if isinstance(x, Operation) else value)
        else:
            leaves.append(x)
    return pack_as(outputs, leaves)

