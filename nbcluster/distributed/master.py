"""Master: owns client sessions; prunes, places and partitions their graphs,
registers the pieces on workers once per signature, and runs steps.

Rule: talks to workers only through `WorkerClient`s from its `WorkerCache`.
"""
from __future__ import annotations

import itertools
import random
import sys
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Optional

from nbcluster import errors
from nbcluster.distributed.placement import place
from nbcluster.distributed.partition import output_dtype, partition
from nbcluster.distributed.rendezvous import task_of
from nbcluster.framework.node import Node, parse_input
from nbcluster.kernels.registry import has_kernel
from nbcluster.proto import config_pb2

_POOL = ThreadPoolExecutor(max_workers=32, thread_name_prefix="nbcluster-master")
_STATUS_TIMEOUT = 10.0


@dataclass
class _Part:
    task: tuple
    client: object
    handle: str
    feeds: list
    fetches: list


@dataclass
class _Plan:
    parts: list
    fetch_from: list  # per fetch: None (it is fed) or the index into parts


class MasterSession:
    def __init__(self, handle: str, config, isolate: bool) -> None:
        self.handle = handle
        self.config = config
        self.isolate = isolate
        self.nodes: dict[str, Node] = {}
        self.plans: dict[tuple, _Plan] = {}
        self.lock = threading.RLock()  # planning (under it) registers workers too
        self.steps: set = set()
        self.closed: Optional[errors.OpError] = None
        self.workers: set = set()


class Master:
    """The master of task `local_task` over the workers in `worker_cache`."""

    def __init__(self, local_task: tuple, worker_cache, default_config=None) -> None:
        self.local_task = local_task
        self.worker_cache = worker_cache
        self.default_config = default_config or config_pb2.ConfigProto()
        self._sessions: dict[str, MasterSession] = {}
        self._lock = threading.Lock()
        self._handles = itertools.count(1)
        self._devices: dict[tuple, list] = {}

    # -- sessions ----------------------------------------------------------
    def create_session(self, nodes: list, config=None) -> tuple:
        merged = config_pb2.ConfigProto()
        merged.CopyFrom(self.default_config)
        if config is not None:
            merged.MergeFrom(config)
        handle = f"{self.local_task[0]}:{self.local_task[1]}:s{next(self._handles)}" \
                 f"-{random.getrandbits(32):08x}"
        session = MasterSession(handle, merged, merged.isolate_session_state)
        self._add_nodes(session, nodes)
        with self._lock:
            self._sessions[handle] = session
        return handle, len(session.nodes)

    def extend_session(self, handle: str, nodes: list, current_version: int) -> int:
        session = self._session(handle)
        with session.lock:
            if current_version != len(session.nodes):
                raise errors.AbortedError(None, None, f"Current graph version "
                                                      f"{current_version} does not match "
                                                      f"the session's {len(session.nodes)}")
            self._add_nodes(session, nodes)
            return len(session.nodes)

    @staticmethod
    def _add_nodes(session: MasterSession, nodes: list) -> None:
        for node in nodes:
            if not node.name or node.name in session.nodes:
                raise errors.InvalidArgumentError(
                    None, None, f"Node name {node.name!r} is empty or already in the graph",
                    node_name=node.name)
        for node in nodes:
            session.nodes[node.name] = node

    def _session(self, handle: str) -> MasterSession:
        session = self._sessions.get(handle)
        if session is None:
            raise errors.AbortedError(None, None, f"Session {handle} is not found. Possibly, "
                                                  f"this master has restarted or was reset.")
        if session.closed is not None:
            raise session.closed
        return session

    def close_session(self, handle: str) -> None:
        with self._lock:
            session = self._sessions.pop(handle, None)
        if session is not None:
            self._close(session, errors.CancelledError(None, None, "Session has been closed."))

    def _close(self, session: MasterSession, error: errors.OpError) -> None:
        session.closed = error
        with session.lock:
            steps, workers = list(session.steps), list(session.workers)
        for step_id, tasks in steps:
            for task in tasks:
                self._quietly(task, "cleanup_graph", step_id)
        for task in workers:
            self._quietly(task, "delete_worker_session", session.handle)

    def _quietly(self, task: tuple, method: str, *args) -> None:
        try:
            getattr(self.worker_cache.get(*task), method)(*args)
        except errors.OpError:
            pass

    def reset(self, containers: Optional[list] = None) -> None:
        """Closes every session and clears `containers` (all if empty) on every worker."""
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            self._close(session, errors.AbortedError(None, None, "Session was reset."))
        for task in self.worker_cache.tasks():
            self.worker_cache.get(*task).cleanup_all(list(containers or []))

    def list_devices(self, handle: Optional[str] = None) -> list:
        config = self._session(handle).config if handle else self.default_config
        return [d for task in self._tasks(config) for d in self._task_devices(task)]

    # -- devices -----------------------------------------------------------
    def _tasks(self, config) -> list:
        tasks = self.worker_cache.tasks()
        if config.device_filters:
            from nbcluster.framework.device_spec import DeviceSpec, is_compatible
            filters = [DeviceSpec.from_string(f) for f in config.device_filters]
            tasks = [t for t in tasks if t == self.local_task or any(
                is_compatible(f.replace(device_type=None, device_index=None),
                              f"/job:{t[0]}/replica:0/task:{t[1]}/device:CPU:0")
                for f in filters)]
        return tasks

    def _task_devices(self, task: tuple) -> list:
        devices = self._devices.get(task)
        if devices is None:
            status = self.worker_cache.get(*task).get_status(_STATUS_TIMEOUT)
            devices = self._devices[task] = list(status.device_attributes)
        return devices

    # -- steps ---------------------------------------------------------------
    def run_step(self, handle: str, feeds: dict, fetches: list, targets: list,
                 options=None) -> tuple:
        """Runs one step; returns ([fetched values], RunMetadata or None)."""
        session = self._session(handle)
        signature = (tuple(sorted(feeds)), tuple(fetches), tuple(sorted(targets)))
        plan = session.plans.get(signature)
        if plan is None:
            with session.lock:
                plan = session.plans.get(signature)
                if plan is None:
                    plan = session.plans[signature] = self._plan(session, *signature)
        options = options or config_pb2.RunOptions()
        trace = options.trace_level >= config_pb2.RunOptions.SOFTWARE_TRACE
        graphs = options.output_partition_graphs or \
            options.trace_level == config_pb2.RunOptions.FULL_TRACE
        timeout_ms = options.timeout_in_ms or session.config.operation_timeout_in_ms
        timeout = timeout_ms / 1000.0 if timeout_ms > 0 else None
        step_id = random.getrandbits(62) + 1
        tasks = tuple(p.task for p in plan.parts)
        with session.lock:
            session.steps.add((step_id, tasks))
        try:
            results = self._run_parts(plan, step_id, feeds, timeout, trace, graphs)
        finally:
            with session.lock:
                session.steps.discard((step_id, tasks))
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

    def _run_parts(self, plan: _Plan, step_id: int, feeds: dict, timeout, trace, graphs):
        def run(part: _Part):
            mine = {f: feeds[f] for f in part.feeds}
            return part.client.run_graph(part.handle.session, part.handle.graph, step_id,
                                         mine, part.fetches, timeout, trace, graphs)
        if len(plan.parts) == 1:
            return [run(plan.parts[0])]
        # Wait on all partitions at once: the first error (from any of them, in
        # any order) cancels the others, which may be blocked on its tensors.
        futures = {_POOL.submit(run, p): i for i, p in enumerate(plan.parts)}
        deadline = None if timeout is None else time.monotonic() + timeout
        results: list = [None] * len(plan.parts)
        pending, first, cancelled = set(futures), None, False
        while pending:
            wait_s = None if deadline is None else max(0.0, deadline - time.monotonic()) + 5
            done, pending = wait(pending, timeout=wait_s, return_when=FIRST_EXCEPTION)
            if not done:
                first = first or errors.DeadlineExceededError(None, None,
                                                              "Timed out running the step")
                if cancelled:
                    break  # a partition ignores cancellation; do not hang the client
            for future in done:
                try:
                    results[futures[future]] = future.result()
                except errors.OpError as e:
                    if first is None or isinstance(first, errors.CancelledError):
                        first = e
            if first is not None and not cancelled:
                cancelled = True
                for other in plan.parts:
                    self._quietly(other.task, "cleanup_graph", step_id)
        if first is not None:
            raise first
        for part in plan.parts:
            self._quietly(part.task, "cleanup_graph", step_id)
        return results

    # -- planning ------------------------------------------------------------
    def _plan(self, session: MasterSession, feeds: tuple, fetches: tuple,
              targets: tuple) -> _Plan:
        nodes = session.nodes
        for name in feeds + fetches:
            _check_tensor(nodes, name)
        for name in targets:
            if name not in nodes:
                raise errors.NotFoundError(None, None, f"Target node '{name}' is not in the "
                                                       f"graph")
        fed = set(feeds)
        needed = _prune(nodes, [f for f in fetches if f not in fed], targets, fed)
        pruned = {n: nodes[n] for n in needed}
        tasks = self._tasks(session.config)
        devices = [d.name for t in tasks for d in self._task_devices(t)]
        incarnations = {d.name: d.incarnation for t in tasks for d in self._task_devices(t)}
        placement = place(pruned, devices, self.local_task,
                          session.config.allow_soft_placement, has_kernel)
        if session.config.log_device_placement:
            for name in sorted(placement):
                print(f"{name}: ({pruned[name].op}): {placement[name]}", file=sys.stderr)
        placed = [n.with_changes(device=placement[n.name]) for n in pruned.values()]
        placed += _feed_nodes(placed, fed, nodes)
        fetch_nodes = [_fetch_node(f, placement[parse_input(f)[0]], nodes)
                       for f in dict.fromkeys(fetches) if f not in fed]
        placed += fetch_nodes
        pieces = partition(placed, key=task_of, incarnation=lambda d: incarnations[d])
        parts, where = [], {}
        for task, part_nodes in pieces.items():
            client = self.worker_cache.get(*task)
            if task not in session.workers:
                client.create_worker_session(session.handle, session.isolate)
                with session.lock:
                    session.workers.add(task)
            threads = session.config.inter_op_parallelism_threads
            handle = client.register_graph(session.handle, part_nodes, threads)
            part_feeds = sorted({n.attrs["tensor_name"] for n in part_nodes
                                 if n.op == "_Recv" and n.attrs.get("client_terminated")})
            part_fetches = [n.attrs["tensor_name"] for n in part_nodes
                            if n.op == "_Send" and n.attrs.get("client_terminated")]
            for f in part_fetches:
                where[f] = len(parts)
            parts.append(_Part(task, client, _Handle(session.handle, handle), part_feeds,
                               part_fetches))
        return _Plan(parts, [where.get(f) for f in fetches])


@dataclass(frozen=True)
class _Handle:
    session: str
    graph: str


def _check_tensor(nodes: dict, name: str) -> None:
    op, sep, index = name.rpartition(":")
    if not sep or not index.isdigit() or op not in nodes:
        raise errors.InvalidArgumentError(
            None, None, f"Tensor {name}, specified in either feed_devices or fetch_devices "
                        f"was not found in the Graph")
    types = nodes[op].attrs.get("_output_types")
    if types is not None and int(index) >= len(types):
        raise errors.InvalidArgumentError(
            None, None, f"Tensor {name}: node '{op}' has only {len(types)} outputs")


def _prune(nodes: dict, fetches: list, targets: tuple, fed: set) -> set:
    needed: set = set()
    stack = [parse_input(f)[0] for f in fetches] + list(targets)
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        node = nodes.get(name)
        if node is None:
            raise errors.InvalidArgumentError(None, None, f"Node '{name}' is needed but is "
                                                          f"not in the graph")
        needed.add(name)
        for ref in node.inputs:
            src, index = parse_input(ref)
            if index >= 0 and f"{src}:{index}" in fed:
                continue
            stack.append(src)
    return needed


def _feed_nodes(placed: list, fed: set, nodes: dict) -> list:
    """A client-terminated _Recv per (fed tensor, consuming device); rewires inputs."""
    recvs: dict = {}
    for i, node in enumerate(placed):
        changed = False
        inputs = list(node.inputs)
        for slot, ref in enumerate(inputs):
            src, index = parse_input(ref)
            tensor = f"{src}:{index}"
            if index < 0 or tensor not in fed:
                continue
            key = (tensor, node.device)
            if key not in recvs:
                recvs[key] = Node(f"_recv_{src}_{index}_{len(recvs)}", "_Recv", (), node.device,
                                  {"tensor_name": tensor, "client_terminated": True,
                                   "send_device": "/job:client", "recv_device": node.device,
                                   "send_device_incarnation": 0,
                                   "tensor_type": output_dtype(nodes[src], index)})
            inputs[slot] = recvs[key].name
            changed = True
        if changed:
            placed[i] = node.with_changes(inputs=tuple(inputs))
    return list(recvs.values())


def _fetch_node(tensor: str, device: str, nodes: dict) -> Node:
    src, index = parse_input(tensor)
    return Node(f"_send_{src}_{index}_fetch", "_Send", (tensor if index else src,), device,
                {"tensor_name": tensor, "client_terminated": True, "send_device": device,
                 "recv_device": "/job:client", "send_device_incarnation": 0,
                 "T": output_dtype(nodes[src], index)})
