"""Master: owns client sessions (create, extend, close, reset) and runs their
steps, planning each signature once (`step_planning`: prune, place,
partition, register the pieces on workers) and fanning out its parts.

Rule: talks to workers only through `WorkerClient`s from a session's
`SessionCluster` (the server's WorkerCache, or the session's own cluster_def
reached with the `connect` the server gives it); never imports grpc.
"""
from __future__ import annotations

import itertools
import os
import random
import secrets
import threading
import time
from typing import Callable, Optional

from nbcluster import errors
from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.framework.node import Node
from nbcluster.master_worker.fanout import cleanup_step, run_partitions
from nbcluster.master_worker.session_cluster import (
    DEFAULT_FIRST_CONTACT_WAIT,
    DEFAULT_STATUS_TIMEOUT,
    DeviceDirectory,
    PropagatedWorkerCache,
    SessionCluster,
    match_target,
    task_name,
)
from nbcluster.master_worker.step_planning import Part, StepPlan, forget_tasks, plan_step
from nbcluster.master_worker.subgraph import check_feed_dtypes
from nbcluster.proto import config_pb2
from nbcluster.runtime.thread_pool import DaemonPool

_POOL = DaemonPool(max_workers=32, thread_name_prefix="nbcluster-master")
IDLE_ENV = "NBCLUSTER_SESSION_IDLE_S"
_IDLE_DEFAULT_S = 24 * 3600.0


def session_idle_limit() -> float:
    """Seconds a session may go unused before the master closes it (0: never).

    TF's servers keep a session until it is closed; a client that died
    without closing one (or a peer that opens many) would hold its graphs
    and worker sessions forever. NBCLUSTER_SESSION_IDLE_S, else a day.
    """
    try:
        return max(0.0, float(os.environ.get(IDLE_ENV) or _IDLE_DEFAULT_S))
    except ValueError:
        return _IDLE_DEFAULT_S


class MasterSession:
    """A client's session on the master: its graph, cluster, cached plans,
    steps in flight and the workers that hold a session for it."""

    def __init__(self, handle: str, config, isolate: bool, cluster: SessionCluster,
                 server_def=None) -> None:
        self.handle = handle
        self.config = config
        self.isolate = isolate
        self.cluster = cluster
        self.server_def = server_def  # this session's own cluster, if it has one
        self.nodes: dict[str, Node] = {}
        self.graph_version = 0  # TF's: 0 at creation, one more per ExtendSession
        self.plans: dict[tuple, StepPlan] = {}
        self.fed_dtypes: set = set()  # (tensor, dtype) feeds found right (check_feed_dtypes)
        self.lock = threading.RLock()  # planning (under it) registers workers too
        self.steps: set = set()
        self.closed: Optional[errors.OpError] = None
        self.workers: set = set()
        self.last_used = time.monotonic()


class CallerWatch:
    """Lets a transport end the step of a caller that went away mid-step (its
    process exited, or it cancelled), as TF's master cancels a RunStep whose
    RPC is cancelled: the step's partitions would otherwise run on, a dequeue
    among them taking the next element anyone enqueues."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancel: Optional[Callable] = None
        self._gone = False

    def watch(self, cancel: Callable) -> bool:
        """`cancel()` will run once the caller is gone; False: it is gone already."""
        with self._lock:
            if not self._gone:
                self._cancel = cancel
            return not self._gone

    def caller_gone(self) -> None:
        with self._lock:
            self._gone, cancel, self._cancel = True, self._cancel, None
        if cancel is not None:
            _POOL.submit(cancel)  # RPCs: not on the transport's callback thread


class Master:
    """The master of task `local_task` over the workers in `worker_cache`.

    Args:
      local_task: (job, task) of the server this master runs in.
      worker_cache: the server's cluster (`tasks()`, `get(job, task)`).
      default_config: a ConfigProto every session's config is merged over.
      connect: address -> WorkerClient, for sessions that bring their own
        cluster (ConfigProto.cluster_def); the server passes the gRPC one.
      check_cluster: (spec, local task, what) -> None, raising where a
        session's own cluster names a task this master may not reach
        (the server's `rpc.peer_check.PeerCheck`).
    """

    def __init__(self, local_task: tuple, worker_cache, default_config=None,
                 connect: Optional[Callable] = None,
                 check_cluster: Optional[Callable] = None) -> None:
        self.local_task = local_task
        self.worker_cache = worker_cache
        self.default_config = default_config or config_pb2.ConfigProto()
        self.connect = connect
        self.check_cluster = check_cluster
        self._sessions: dict[str, MasterSession] = {}
        self._lock = threading.Lock()
        self._handles = itertools.count(1)
        self._remote: dict = {}  # address -> client, for propagated clusters
        self._remote_lock = threading.Lock()
        self._contacted: set = set()  # DeviceDirectory keys of workers this master reached
        self.idle_limit_s = session_idle_limit()

    # -- sessions ----------------------------------------------------------
    def create_session(self, nodes: list, config=None, target: Optional[str] = None) -> tuple:
        """Returns (handle, graph version).

        Args:
          nodes: the graph so far.
          config: a ConfigProto merged over the master's default. With a
            `cluster_def`, the session runs on that cluster: `target` must
            be the address of exactly one of its tasks (as TF matches it).
          target: the target the client connected to ("grpc://host:port").
        Raises:
          InvalidArgumentError: `target` matches no task of `cluster_def`, or
            several; a malformed device filter; a duplicate node name.
        """
        merged = config_pb2.ConfigProto()
        merged.CopyFrom(self.default_config)
        if config is not None:
            merged.MergeFrom(config)
        self._expire_idle()
        # Unguessable: a handle is all another client would need to use a session.
        handle = f"{self.local_task[0]}:{self.local_task[1]}:s{next(self._handles)}" \
                 f"-{secrets.token_hex(8)}"
        own = config is not None and len(config.cluster_def.job) > 0
        cluster, server_def = self._own_cluster(merged, config, target) if own \
            else (self._server_cluster(merged), None)
        isolate = merged.isolate_session_state or \
            (own and not merged.experimental.share_session_state_in_clusterspec_propagation)
        session = MasterSession(handle, merged, isolate, cluster, server_def)
        self._add_nodes(session, nodes)
        with self._lock:
            self._sessions[handle] = session
        return handle, session.graph_version

    def _status_timeout(self, config) -> float:
        ms = config.operation_timeout_in_ms
        return ms / 1000.0 if ms > 0 else DEFAULT_STATUS_TIMEOUT

    def _directory(self, config) -> DeviceDirectory:
        ms = config.operation_timeout_in_ms
        return DeviceDirectory(self._contacted,
                               ms / 1000.0 if ms > 0 else DEFAULT_FIRST_CONTACT_WAIT)

    def _server_cluster(self, config) -> SessionCluster:
        # Each new session lists devices afresh (as TF does), so a task that
        # restarted since an older session is seen with its new incarnation.
        return SessionCluster(self.local_task, self.worker_cache, config.device_filters,
                              self._directory(config), self._status_timeout(config))

    def _own_cluster(self, merged, config, target: Optional[str]) -> tuple:
        """TF's ClusterSpec propagation: a worker cache for the session's cluster."""
        try:
            spec = ClusterSpec(config.cluster_def)
        except (TypeError, ValueError) as e:
            raise errors.InvalidArgumentError(None, None, f"Invalid cluster_def: {e}") from None
        if target is None:
            raise errors.InvalidArgumentError(
                None, None, f"A session with a cluster_def needs its target to find the "
                            f"master's task, and none was given. ClusterDef: {spec}")
        local = match_target(spec, target)
        if self.check_cluster is not None:
            self.check_cluster(spec, local, "CreateSession's cluster_def")
        if self.connect is None and sum(spec.num_tasks(j) for j in spec.jobs) > 1:
            raise errors.UnimplementedError(
                None, None, "This master has no way to reach tasks by address, so it "
                            "cannot run a session with its own cluster_def")
        cache = PropagatedWorkerCache(spec, local, self.worker_cache.get(*self.local_task),
                                      self.connect, self._remote, self._remote_lock)

        def key_of(task: tuple):
            return ("task",) + self.local_task if task == local else \
                ("address", cache.address(*task))

        def describe(task: tuple) -> str:
            return f"{task_name(task)} at {cache.address(*task)}"

        cluster = SessionCluster(local, cache, merged.device_filters, self._directory(merged),
                                 self._status_timeout(merged), key_of, describe)
        server_def = config_pb2.ServerDef(cluster=spec.as_cluster_def(), job_name=local[0],
                                          task_index=local[1], protocol="grpc")
        return cluster, server_def

    def extend_session(self, handle: str, nodes: list, current_version: int) -> int:
        session = self._session(handle)
        with session.lock:
            if current_version != session.graph_version:
                raise errors.FailedPreconditionError(
                    None, None, f"Current graph version is {session.graph_version} but the "
                                f"client expected {current_version}")
            self._add_nodes(session, nodes)
            session.graph_version += 1
            return session.graph_version

    @staticmethod
    def _add_nodes(session: MasterSession, nodes: list) -> None:
        seen: set = set()
        for node in nodes:  # all checked before any is added: a refused graph adds nothing
            if not node.name or node.name in session.nodes or node.name in seen:
                raise errors.InvalidArgumentError(
                    None, None, f"Node name {node.name!r} is empty or already in the graph "
                                f"(duplicate node name)", node_name=node.name)
            seen.add(node.name)
        for node in nodes:
            session.nodes[node.name] = node

    def _session(self, handle: str) -> MasterSession:
        session = self._sessions.get(handle)
        if session is None:
            raise errors.AbortedError(None, None, f"Session {handle} is not found. Possibly, "
                                                  f"this master has restarted or was reset.")
        if session.closed is not None:
            raise session.closed
        session.last_used = time.monotonic()
        return session

    def _expire_idle(self) -> None:
        """Closes the sessions unused for `idle_limit_s` with no step in flight
        (in the background: a worker that is gone must not hold up a create)."""
        if not self.idle_limit_s:
            return
        now = time.monotonic()
        with self._lock:
            idle = [s for s in self._sessions.values()
                    if not s.steps and now - s.last_used > self.idle_limit_s]
            for session in idle:
                del self._sessions[session.handle]
        for session in idle:
            _POOL.submit(self._close, session, errors.AbortedError(
                None, None, f"Session {session.handle} was closed after "
                            f"{self.idle_limit_s:g}s unused ({IDLE_ENV})"))

    def close_session(self, handle: str) -> None:
        with self._lock:
            session = self._sessions.pop(handle, None)
        if session is not None:
            self._close(session, errors.CancelledError(None, None, "Session has been closed."))

    def _close(self, session: MasterSession, error: errors.OpError) -> None:
        session.closed = error
        with session.lock:
            steps, workers = list(session.steps), list(session.workers)
        for step_id, clients in steps:
            for client in clients:
                _quietly(client, "cleanup_graph", step_id)
        for task in workers:
            _quietly(session.cluster.client(task), "delete_worker_session", session.handle)

    def reset(self, containers: Optional[list] = None) -> None:
        """Closes every session and clears `containers` (all if empty) on every
        task of the server's cluster.

        Raises:
          UnavailableError (or the error a task gave): some task could not be
            cleared; it is named, and every other task was cleared.
        """
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            self._close(session, errors.AbortedError(None, None, "Session was reset."))
        tasks = self.worker_cache.tasks()

        def clear(task: tuple):
            try:
                self.worker_cache.get(*task).cleanup_all(list(containers or []))
            except errors.OpError as e:
                return e
            return None
        failures = [(t, e) for t, e in zip(tasks, _POOL.map(clear, tasks)) if e is not None]
        if failures:
            first = failures[0][1]
            cls = errors.exception_type_from_error_code(first.error_code)
            raise cls(None, None, "Reset could not clear containers on " + "; ".join(
                f"{task_name(t)}: {e.message}" for t, e in failures) +
                f" (the other {len(tasks) - len(failures)} task(s) were cleared)")

    def list_devices(self, handle: Optional[str] = None) -> list:
        cluster = self._session(handle).cluster if handle \
            else self._server_cluster(self.default_config)
        return [d for task in cluster.tasks() for d in cluster.devices(task)]

    # -- steps ---------------------------------------------------------------
    def run_step(self, handle: str, feeds: dict, fetches: list, targets: list,
                 options=None, caller: Optional[CallerWatch] = None) -> tuple:
        """Runs one step; returns ([fetched values], RunMetadata or None).

        `caller`, given by a transport, ends the step if its caller goes away.

        Raises:
          AbortedError: a worker of the step restarted (its graphs are gone);
            the session forgets what it knew of the step's tasks, so running
            again re-plans on the new incarnation, as in TF.
        """
        session = self._session(handle)
        check_feed_dtypes(session.nodes, feeds, session.fed_dtypes)
        signature = (tuple(sorted(feeds)), tuple(fetches), tuple(sorted(targets)))
        plan = session.plans.get(signature)
        if plan is None:
            with session.lock:
                plan = session.plans.get(signature)
                if plan is None:
                    plan = session.plans[signature] = plan_step(session, *signature)
        options = options or config_pb2.RunOptions()
        trace = options.trace_level >= config_pb2.RunOptions.SOFTWARE_TRACE
        graphs = options.output_partition_graphs or \
            options.trace_level == config_pb2.RunOptions.FULL_TRACE
        timeout_ms = options.timeout_in_ms or session.config.operation_timeout_in_ms
        timeout = timeout_ms / 1000.0 if timeout_ms > 0 else None
        step_id = random.getrandbits(62) + 1
        clients = tuple(p.client for p in plan.parts)
        with session.lock:
            session.steps.add((step_id, clients))
        try:
            if caller is not None and not caller.watch(lambda: cleanup_step(clients, step_id)):
                raise errors.CancelledError(None, None, "The step's caller went away")
            results = self._run_parts(plan, step_id, feeds, timeout, trace, graphs)
        except errors.AbortedError:
            forget_tasks(session, [p.task for p in plan.parts])
            raise
        finally:
            with session.lock:
                session.steps.discard((step_id, clients))
        if session.closed is not None:
            raise session.closed
        values = [feeds[f] if where is None else results[where].fetches[f]
                  for f, where in zip(fetches, plan.fetch_from)]
        metadata = None
        if trace or graphs:
            metadata = config_pb2.RunMetadata()
            for r in results:
                if trace and r.step_stats is not None:
                    metadata.step_stats.dev_stats.extend(r.step_stats.dev_stats)
                metadata.partition_graphs.extend(r.partition_graphs)
        return values, metadata

    def _run_parts(self, plan: StepPlan, step_id: int, feeds: dict, timeout, trace, graphs):
        def request(part: Part) -> tuple:  # run_graph's arguments for `part`
            return (part.handle.session, part.handle.graph, step_id,
                    {f: feeds[f] for f in part.feeds}, part.fetches, timeout, trace, graphs)

        def run(part: Part):
            return part.client.run_graph(*request(part))

        def start(part: Part, on_error):  # sent now, read on this thread (fanout.py)
            begin = getattr(part.client, "start_run_graph", None)
            return None if begin is None else begin(*request(part), on_error)

        began = time.monotonic()

        def cleanup() -> None:
            cleanup_step([part.client for part in plan.parts], step_id, began)

        results = run_partitions(plan.parts, run, cleanup, timeout, _POOL, start)
        for part in plan.cleanup_after:  # TF's workers keep a step's rendezvous until
            _POOL.submit(_quietly, part.client, "cleanup_graph", step_id)  # told, as TF's does
        return results


def _quietly(client, method: str, *args) -> None:
    try:
        getattr(client, method)(*args)
    except errors.OpError:
        pass
