"""Worker: runs registered graph partitions on one task's devices.

It owns the task's devices and resources, splits each registered graph by
device, plans each piece once, and per step runs the pieces concurrently
with one rendezvous. Peers fetch tensors from it with `recv_tensor`.
Each master session sees it through a `WorkerSession` (its name for this
task, renamed devices, resources, peers); a step learns its session from
its first RunGraph here, and a RecvTensor needs none: a key's incarnation
says the tensor is this worker's, whatever name the session gave it.
"""
from __future__ import annotations

import itertools
import os
import socket
import threading
import time
from typing import Callable, Optional

from nbcluster import errors
from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.framework.graph_def import nodes_to_proto
from nbcluster.kernels import load_all
from nbcluster.master_worker import send_recv  # noqa: F401 - registers _Send/_Recv
from nbcluster.master_worker.partition import partition
from nbcluster.master_worker.process_usage import ProcessUsage, gpu_memory
from nbcluster.master_worker.rendezvous import task_of
from nbcluster.master_worker.step_stats import build_step_stats
from nbcluster.master_worker.task_counters import TaskCounters
from nbcluster.master_worker.tensor_receiving import TensorReceiver, prefetch_plan
from nbcluster.master_worker.tensor_serving import TensorServer
from nbcluster.master_worker.transport import RunGraphResult
from nbcluster.master_worker.worker_session import WorkerSession, propagated_session
from nbcluster.master_worker.worker_steps import StepTable
from nbcluster.proto import worker_pb2
from nbcluster.runtime.control_flow_executor import FrameExecutor, make_executor
from nbcluster.runtime.math_threads import process_threads
from nbcluster.runtime.resources import ResourceMgr
from nbcluster.runtime.step import CancellationManager, StepContext
from nbcluster.runtime.thread_pool import DaemonPool

load_all()


_POOL = DaemonPool(max_workers=32, thread_name_prefix="nbcluster-partition")


class _Graph:
    def __init__(self, executors: list, session: WorkerSession, remote_sends: int,
                 nodes: dict, prefetch: Optional[dict] = None) -> None:
        self.executors = executors
        self.session = session
        self.remote_sends = remote_sends  # tensors peers will fetch each step
        self.nodes = nodes  # device -> [Node], for partition_graphs
        self.prefetch = prefetch or {}  # producing task -> [keys], streamed each step
        # Frame executors count what they send to peers (a loop's Send runs many times).
        self.counts_sends = any(isinstance(ex, FrameExecutor) for ex in executors)


class Worker:
    """The worker of task /job:`job`/task:`task`.

    Args:
      devices: the task's runtime Devices, named for it.
      peers: (job, task) -> WorkerClient of the server's cluster, for recvs.
      connect: address -> WorkerClient, for sessions that bring their own
        cluster (the server passes the gRPC one).
      check_cluster: (spec, this task, what) -> None, raising where a
        session's ServerDef names a task this worker may not reach.
      parallelism: a graph's inter-op threads when its session sets none: the
        task's math-thread share (`runtime/math_threads.py`); 0 means this
        process's. More than the task's cores only add thread wakes (~0.1 ms each).
    """

    def __init__(self, job: str, task: int, devices: list,
                 peers: Optional[Callable] = None, connect: Optional[Callable] = None,
                 parallelism: int = 0, check_cluster: Optional[Callable] = None) -> None:
        self.job, self.task = job, task
        self.parallelism = parallelism
        self.devices = {d.name: d for d in devices}
        self.incarnation = devices[0].incarnation
        self.resources = ResourceMgr()
        self._connect = connect
        self._check_cluster = check_cluster
        self._clients: dict = {}  # address -> client, for propagated sessions
        self._lock = threading.Lock()  # sessions, graphs, clients (steps: the StepTable's own)
        # Sessions on the server's own cluster that keep no state of their own
        # (and RPCs with no session) use this one.
        self._default = WorkerSession((job, task), self.devices, self.resources, False, peers)
        self._sessions: dict[str, WorkerSession] = {}
        self._default_handles: set = set()  # open sessions that use self._default
        self._graphs: dict[tuple, _Graph] = {}
        self.counters = TaskCounters()  # GetStatus's steps and bytes, bumped from any thread
        self._receiver = TensorReceiver(self.counters, self._default)
        self._step_table = StepTable(self._receiver.remote_recv)  # the steps' one owner
        self._server = TensorServer(self, self._step_table, self.counters, self._names)
        self._handles = itertools.count(1)
        self.started = time.time()
        self.last_error = ""
        self._usage = ProcessUsage()

    # -- status ------------------------------------------------------------
    steps_run = property(lambda self: self.counters.steps_run)
    bytes_sent = property(lambda self: self.counters.bytes_sent)
    bytes_received = property(lambda self: self.counters.bytes_received)

    def get_status(self, timeout: Optional[float] = None):
        cpu_percent, rss_bytes = self._usage.sample()
        steps_run, bytes_sent, bytes_received = self.counters.snapshot()
        response = worker_pb2.GetStatusResponse(
            incarnation_start_unix_micros=int(self.started * 1e6), pid=os.getpid(),
            host=socket.gethostname(), steps_run=steps_run, bytes_sent=bytes_sent,
            bytes_received=bytes_received,
            active_sessions=len(self._sessions) + len(self._default_handles),
            last_error=self.last_error, job_name=self.job, task_index=self.task,
            cpu_percent=cpu_percent, rss_bytes=rss_bytes)
        for name, in_use, reserved, used, total in gpu_memory(self.devices.values()):
            response.gpu_memory.add(device=name, bytes_in_use=in_use, bytes_reserved=reserved,
                                    device_bytes_used=used, device_bytes_total=total)
        for d in self.devices.values():
            response.device_attributes.add(
                name=d.name, device_type=d.device_type, memory_limit=d.memory_limit,
                incarnation=d.incarnation, physical_device_desc=d.description)
        return response

    # -- sessions and graphs -------------------------------------------------
    def create_worker_session(self, session_handle: str, isolate: bool,
                              server_def=None) -> None:
        """Creates the session's view of this worker (again: a no-op).

        Args:
          isolate: the session's resources are private to it.
          server_def: the session's own cluster and this worker's name in it
            (TF's ClusterSpec propagation); None for the server's cluster.
        Raises:
          InvalidArgumentError: `server_def` names no task of its cluster.
        """
        if server_def is not None:
            session = propagated_session(server_def, self.devices, self.resources, isolate,
                                         self._client_at if self._connect else None)
            if self._check_cluster is not None:
                self._check_cluster(ClusterSpec(server_def.cluster),
                                    (server_def.job_name, server_def.task_index),
                                    "CreateWorkerSession's ServerDef")
        elif isolate:
            session = WorkerSession((self.job, self.task), self.devices, ResourceMgr(), True,
                                    self._default.peer)
        else:
            with self._lock:  # counted for GetStatus's active_sessions
                self._default_handles.add(session_handle)
            return
        with self._lock:
            self._sessions.setdefault(session_handle, session)

    def delete_worker_session(self, session_handle: str) -> None:
        with self._lock:
            session = self._sessions.pop(session_handle, None)
            self._default_handles.discard(session_handle)
            for key in [k for k in self._graphs if k[0] == session_handle]:
                del self._graphs[key]
        if session is not None and session.owns_resources:
            session.resources.clear()

    def _client_at(self, address: str):
        with self._lock:
            client = self._clients.get(address)
            if client is None:
                client = self._clients[address] = self._connect(address)
            return client

    def register_graph(self, session_handle: str, nodes: list, parallelism: int = 0,
                       create_worker_session_called: bool = False) -> str:
        """Plans `nodes` (this task's piece of a session's graph); returns its handle.

        Args:
          create_worker_session_called: the master created `session_handle`
            here first (TF's flag); if this worker does not know it, it
            restarted since.
        Raises:
          AbortedError: `create_worker_session_called` and the session is
            unknown here, so the master must recreate it (as TF does).
          InvalidArgumentError: a node is not on a device of this task.
        """
        with self._lock:
            session = self._sessions.get(session_handle)
            known = session is not None or session_handle in self._default_handles
            session = session or self._default
        if create_worker_session_called and not known:
            raise errors.AbortedError(
                None, None, f"Session handle {session_handle!r} is not found on "
                            f"/job:{self.job}/task:{self.task}. Possibly, this worker just "
                            f"restarted.")
        for node in nodes:
            if node.device not in session.devices:
                raise errors.InvalidArgumentError(
                    None, None, f"Node '{node.name}' is assigned to device '{node.device}', "
                                f"which is not a device of {_task_name(session.task)}"
                                f"{self._boot_note(session)}", node_name=node.name)
        pieces = partition(nodes, key=lambda d: d, incarnation=lambda d: self.incarnation)
        threads = parallelism or self.parallelism or process_threads()
        executors = [make_executor(part, session.devices[dev], threads)
                     for dev, part in pieces.items()]
        # A control-flow _Send runs any number of times a step: its executor counts them.
        remote = sum(1 for n in nodes if n.op == "_Send" and not n.attrs.get("client_terminated")
                     and not n.attrs.get("_cf")
                     and task_of(n.attrs["recv_device"]) != session.task)
        with self._lock:
            handle = f"{self.job}:{self.task}:g{next(self._handles)}"
            self._graphs[(session_handle, handle)] = _Graph(executors, session, remote, pieces,
                                                            prefetch_plan(nodes))
        return handle

    def _boot_note(self, session: WorkerSession) -> str:
        if session.task != (self.job, self.task):
            return f" (this worker, /job:{self.job}/task:{self.task}, under the session's name)"
        if session is self._default:
            return " (a session that renames this task is unknown here: restarted?)"
        return ""

    def deregister_graph(self, session_handle: str, graph_handle: str) -> None:
        with self._lock:
            self._graphs.pop((session_handle, graph_handle), None)

    # -- steps ---------------------------------------------------------------
    def run_graph(self, session_handle: str, graph_handle: str, step_id: int, feeds: dict,
                  fetches: list, timeout: Optional[float] = None, collect_stats: bool = False,
                  partition_graphs: bool = False) -> RunGraphResult:
        graph = self._graphs.get((session_handle, graph_handle))
        if graph is None:
            raise errors.AbortedError(None, None, f"Graph handle {graph_handle!r} is not "
                                                  f"registered on this worker (restarted?)")
        cancel = CancellationManager()
        deadline = None if timeout is None else time.monotonic() + timeout
        step = self._step_table.claim(step_id, graph.session, cancel, graph.remote_sends)
        contexts = [StepContext(step_id, graph.session.resources, self.job, step.rendezvous,
                                feeds, cancel, deadline, collect_stats)
                    for _ in graph.executors]
        try:
            if graph.prefetch:
                self._receiver.prefetch(step, graph.prefetch, step_id, deadline, cancel)
            stats = self._run_all(graph.executors, contexts)
        except errors.OpError as e:
            step.rendezvous.abort(e)
            self.last_error = f"{type(e).__name__}: {e.message}"
            raise
        finally:
            loop_sends = sum(getattr(c, "remote_sent", 0) for c in contexts) \
                if graph.counts_sends else 0
            self._step_table.release(step_id, step, loop_sends)
        self.counters.step_ran()
        out: dict = {}
        for ctx in contexts:
            out.update(ctx.fetches)
        missing = [f for f in fetches if f not in out]
        if missing:
            raise errors.InvalidArgumentError(None, None, f"Fetches {missing} were not produced "
                                                          f"by graph {graph_handle}")
        result = RunGraphResult(out)
        if collect_stats:
            result.step_stats = build_step_stats(
                [(ex, rows) for ex, rows in zip(graph.executors, stats)])
        if partition_graphs:
            result.partition_graphs = [nodes_to_proto(p) for p in graph.nodes.values()]
        return result

    def _run_all(self, executors: list, contexts: list) -> list:
        if len(executors) == 1:
            return [executors[0].run(contexts[0])]
        futures = [_POOL.submit(ex.run, ctx) for ex, ctx in zip(executors[1:], contexts[1:])]
        results, first_error = [], None
        try:
            results.append(executors[0].run(contexts[0]))
        except errors.OpError as e:
            first_error = e
        for f in futures:
            try:
                results.append(f.result())
            except errors.OpError as e:
                first_error = first_error or e
        if first_error is not None:
            raise contexts[0].cancellation.error or first_error
        return results

    def cleanup_graph(self, step_id: int) -> None:
        """Ends a step: wakes anything still waiting in it, drops its tensors."""
        self._step_table.end(step_id, errors.CancelledError(None, None,
                                                            f"Step {step_id} was cancelled"))

    def cancel_steps(self) -> None:
        """Ends every step in flight (the server is stopping): nothing stays blocked."""
        for step_id in self._step_table.ids():
            self.cleanup_graph(step_id)

    def cleanup_all(self, containers: Optional[list] = None) -> None:
        self.resources.clear(containers or None)
        with self._lock:
            isolated = [s.resources for s in self._sessions.values() if s.owns_resources]
        for mgr in isolated:
            mgr.clear(containers or None)

    # -- tensors for peers (`tensor_serving.py`) ------------------------------
    def recv_tensor(self, step_id: int, key: str, timeout: Optional[float] = None,
                    waiter=None, stopped=lambda: False):
        """The tensor `key` of step `step_id`, once this task's Send has produced it.

        `waiter` is the receiving step's context when the caller is in this
        process: its cancellation and deadline then end the wait. A peer's
        wait ends once `stopped()` (checked on `wake_step`).
        """
        return self._server.recv_tensor(step_id, key, timeout, waiter, stopped)

    def recv_tensors(self, step_id: int, keys: list, timeout: Optional[float] = None,
                     stopped=lambda: False, max_bytes: Optional[int] = None):
        """Yields the tensors `keys` as this task's Sends produce them, in
        batches (`TensorServer.recv_tensors`)."""
        return self._server.recv_tensors(step_id, keys, timeout, stopped, max_bytes)

    def push_tensors(self, step_id: int, keys: list, deliver, timeout: Optional[float] = None,
                     stopped=lambda: False, wakeup=None, idle=None) -> None:
        """`recv_tensors`, each batch written by `deliver` on the thread that
        lands it (`TensorServer.push_tensors`); returns at the stream's end."""
        self._server.push_tensors(step_id, keys, deliver, timeout, stopped, wakeup, idle)

    def wake_step(self, step_id: int) -> None:
        """Wakes the step's `recv_tensors` waiters (their caller went away)."""
        self._server.wake_step(step_id)

    def _names(self) -> set:
        """The (job, task) names this worker's sessions give it."""
        with self._lock:
            return {s.task for s in self._sessions.values()}


def _task_name(task: tuple) -> str:
    return f"/job:{task[0]}/task:{task[1]}"
