"""Planning a step for a master session: prune, place, partition by task, and
register the pieces on their workers, once per (feeds, fetches, targets).

Rule: this runs once per signature (the master caches the plan), never per
step. A task that restarted (AbortedError) is forgotten with every plan that
uses it, so the next run re-plans on its new incarnation, as in TF.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Optional, Protocol

from nbcluster import errors
from nbcluster.framework.device_spec import DeviceSpec
from nbcluster.framework.node import parse_input
from nbcluster.master_worker.partition import partition
from nbcluster.master_worker.placement import place
from nbcluster.master_worker.rendezvous import attr_incarnation, task_of
from nbcluster.master_worker.subgraph import check_tensor, feed_nodes, fetch_node, prune
from nbcluster.proto import config_pb2
from nbcluster.runtime.kernel_table import has_kernel


class PlannedSession(Protocol):
    """What planning reads and writes of a master's session (`master.MasterSession`,
    which imports this module: a Protocol here keeps the two from importing each other)."""

    handle: str
    config: object           # config_pb2.ConfigProto
    isolate: bool
    cluster: object          # session_cluster.SessionCluster
    server_def: Optional[object]
    nodes: dict
    plans: dict              # (feeds, fetches, targets) -> StepPlan
    lock: object             # held by the caller while it plans
    workers: set


@dataclass(frozen=True)
class GraphHandle:
    """Where a registered piece lives on its worker: (session handle, graph handle)."""
    session: str
    graph: str


@dataclass
class Part:
    """One task's piece of a step: its client, graph, and client feeds/fetches."""
    task: tuple
    client: object
    handle: GraphHandle
    feeds: list
    fetches: list


@dataclass
class StepPlan:
    """A signature's plan: its parts, and where each fetch comes from."""
    parts: list
    fetch_from: list  # per fetch: None (it is fed) or the index into parts
    # The parts whose workers keep a step's state until CleanupGraph (TF's): known
    # once each has registered, since that first call tells a TF task apart.
    cleanup_after: tuple = ()


def plan_step(session: PlannedSession, feeds: tuple, fetches: tuple,
              targets: tuple) -> StepPlan:
    """Prunes, places and partitions the session's graph and registers the pieces.

    Args:
      session: the MasterSession; its lock is held by the caller.
      feeds, fetches, targets: the step's signature (feeds and targets sorted).

    Returns:
      The StepPlan to cache under that signature.

    Raises:
      NotFoundError: a fetch, feed or target is not in the graph.
      InvalidArgumentError: the graph cannot be placed.
      AbortedError: a worker restarted while registering (its tasks are forgotten).
    """
    nodes = session.nodes
    for name in feeds + fetches:
        check_tensor(nodes, name)
    for name in targets:
        if name not in nodes:
            raise errors.NotFoundError(None, None, f"Target node '{name}' is not in the "
                                                   f"graph")
    fed = set(feeds)
    needed = prune(nodes, [f for f in fetches if f not in fed], targets, fed)
    pruned = {n: nodes[n] for n in needed}
    placement, incarnations = _place(session, pruned)
    if session.config.log_device_placement:
        for name in sorted(placement):
            print(f"{name}: ({pruned[name].op}): {placement[name]}", file=sys.stderr)
    placed = [n.with_changes(device=placement[n.name]) for n in pruned.values()]
    placed += feed_nodes(placed, fed, nodes)
    fetch_nodes = [fetch_node(f, placement[parse_input(f)[0]], nodes)
                   for f in dict.fromkeys(fetches) if f not in fed]
    placed += fetch_nodes
    pieces = partition(placed, key=task_of, incarnation=lambda d: incarnations[d])
    try:
        return _register(session, pieces, fetches)
    except errors.AbortedError:
        forget_tasks(session, list(pieces))
        raise


def forget_tasks(session: PlannedSession, tasks: list) -> None:
    """After a restart: drop the tasks' devices and every plan that uses them."""
    gone = set(tasks)
    with session.lock:
        for task in gone:
            session.cluster.forget(task)
            session.workers.discard(task)
        for signature in [s for s, p in session.plans.items()
                          if any(part.task in gone for part in p.parts)]:
            del session.plans[signature]


def _place(session: PlannedSession, pruned: dict) -> tuple:
    """Places `pruned`, asking only the tasks it may need for their devices.

    First the master's task and the tasks nodes are pinned to; if that
    fails, or puts a node with no job/task on another task, every task the
    session may use (so the result is the one a full device list gives).
    """
    cluster = session.cluster
    every = cluster.tasks()
    first = _pinned_tasks(pruned.values(), every, cluster.local_task)
    for tasks in ([first, every] if first != every else [every]):
        attrs = [d for t in tasks for d in cluster.devices(t)]
        try:
            placement = place(pruned, [d.name for d in attrs], cluster.local_task,
                              session.config.allow_soft_placement, has_kernel)
        except errors.InvalidArgumentError:
            if tasks is every:
                raise
            continue
        if tasks is every or not _strays(pruned, placement, cluster.local_task):
            return placement, {d.name: attr_incarnation(d.incarnation) for d in attrs}
    raise AssertionError("unreachable")


def _register(session: PlannedSession, pieces: dict, fetches: tuple) -> StepPlan:
    cluster = session.cluster
    parts, where = [], {}
    for task, part_nodes in pieces.items():
        client = cluster.client(task)
        if task not in session.workers:
            client.create_worker_session(session.handle, session.isolate,
                                         _server_def_for(session, task))
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
        parts.append(Part(task, client, GraphHandle(session.handle, handle), part_feeds,
                          part_fetches))
    return StepPlan(parts, [where.get(f) for f in fetches],
                    tuple(p for p in parts if p.client.needs_cleanup))


def _server_def_for(session: PlannedSession, task: tuple):
    """TF's CreateWorkerSession under ClusterSpec propagation: the session's
    cluster, with job_name/task_index naming the worker it is sent to (which
    may have booted under another name: it renames its devices for us)."""
    if session.server_def is None:
        return None
    server_def = config_pb2.ServerDef()
    server_def.CopyFrom(session.server_def)
    server_def.job_name, server_def.task_index = task
    return server_def


def _pinned_tasks(nodes, tasks: list, local_task: tuple) -> list:
    """The master's task and every task some node's device string points at."""
    wanted = {local_task}
    for node in nodes:
        try:
            spec = DeviceSpec.from_string(node.device)
        except errors.InvalidArgumentError:
            continue  # placement reports it
        if spec.job is None and spec.task is None:
            continue
        wanted.update(t for t in tasks if spec.job in (None, t[0]) and spec.task in (None, t[1]))
    return [t for t in tasks if t in wanted]


def _strays(nodes: dict, placement: dict, local_task: tuple) -> bool:
    """Whether a node pinned to no job/task left the master's task."""
    for name, device in placement.items():
        spec = DeviceSpec.from_string(nodes[name].device)
        if spec.job is None and spec.task is None and task_of(device) != local_task:
            return True
    return False
