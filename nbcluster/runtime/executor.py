"""Runs one device partition: planned once, then executed every step.

Rule: all per-graph work (topological order, kernel construction, input
wiring) happens in `Executor.__init__`; `run` only moves values.
Ready nodes run inline on the thread that made them ready; extra ready
branches go to a shared thread pool while fewer than `parallelism` chains
of this step are active. A chain entering a blocking kernel (Recv, dequeue)
stops counting as active, so blocked branches never starve the rest.
"""
from __future__ import annotations

import collections
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from nbcluster import errors
from nbcluster.framework.node import Node, parse_input
from nbcluster.framework.op_registry import get_op_def
from nbcluster.kernels.registry import get_kernel_factory

_POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="nbcluster-exec")


class Executor:
    """An executable plan of one partition's nodes on one device."""

    def __init__(self, nodes: list[Node], device, parallelism: int = 1) -> None:
        self.device = device
        self.parallelism = max(1, parallelism)
        self.nodes = _topological(nodes)
        index = {n.name: i for i, n in enumerate(self.nodes)}
        n = len(self.nodes)
        self.names = [node.name for node in self.nodes]
        self.kernels: list = [None] * n
        self.inputs: list = [None] * n
        self.blocking = [False] * n
        # A feed's _Recv only reads a value already there: cheap, never blocking.
        feeds = [n.op == "_Recv" and bool(n.attrs.get("client_terminated")) for n in self.nodes]
        self.cheap = [node.op in _CHEAP or fed for node, fed in zip(self.nodes, feeds)]
        succ: list = [set() for _ in range(n)]
        pending = [0] * n
        for i, node in enumerate(self.nodes):
            op_def = get_op_def(node.op)
            self.blocking[i] = op_def.blocking and not feeds[i]
            wiring, preds = [], set()
            for slot, ref in enumerate(node.inputs):
                src_name, k = parse_input(ref)
                src = index[src_name]
                preds.add(src)
                if k >= 0:
                    deref = (k in get_op_def(self.nodes[src].op).ref_outputs
                             and slot not in op_def.ref_inputs)
                    wiring.append((src, k, deref))
            self.inputs[i] = tuple(wiring)
            pending[i] = len(preds)
            for p in preds:
                succ[p].add(i)
            self.kernels[i] = _make_kernel(node, device)
        self.successors = [tuple(sorted(s)) for s in succ]
        self.pending = pending
        self.roots = [i for i in range(n) if pending[i] == 0]
        # Parallel dataflow only pays when two costly kernels could overlap.
        costly = sum(1 for c, b in zip(self.cheap, self.blocking) if not c or b)
        # A blocking kernel (dequeue, Recv) must not hold the only thread that
        # could run what unblocks it, so plans with one never run sequentially.
        self.sequential = not any(self.blocking) and (self.parallelism == 1 or costly <= 1)

    def run(self, ctx) -> Optional[list]:
        """Runs every node once; returns raw stats rows if `ctx.collect_stats`."""
        stats = [] if ctx.collect_stats else None
        if self.sequential:
            values: list = [None] * len(self.nodes)
            for i in range(len(self.nodes)):
                self._execute(i, values, ctx, stats)
        else:
            _StepRun(self, ctx, stats).run()
        if ctx.cancellation.error is not None:
            raise ctx.cancellation.error
        return stats

    def _execute(self, i: int, values: list, ctx, stats) -> bool:
        if ctx.cancellation.error is not None:
            return False
        args = []
        for src, k, deref in self.inputs[i]:
            value = values[src][k]
            args.append(value.read() if deref else value)
        start = time.time() if stats is not None else 0.0
        try:
            values[i] = self.kernels[i](ctx, *args)
        except Exception as e:  # noqa: BLE001 - every kernel failure becomes an OpError
            ctx.cancellation.cancel(_as_op_error(e, self.names[i]))
            return False
        if stats is not None:
            stats.append((i, start, time.time(), threading.get_ident(), values[i]))
        return True


class _StepRun:
    """The mutable state of one dataflow run of an Executor."""

    def __init__(self, plan: Executor, ctx, stats) -> None:
        self.plan, self.ctx, self.stats = plan, ctx, stats
        self.values: list = [None] * len(plan.nodes)
        self.pending = list(plan.pending)
        self.lock = threading.Lock()
        self.cheap: list = []              # ready nodes always run inline
        self.ready: collections.deque = collections.deque()
        self.active = 0
        self.outstanding = 0
        self.done = threading.Event()

    def run(self) -> None:
        with self.lock:
            for i in self.plan.roots:
                (self.cheap if self.plan.cheap[i] else self.ready).append(i)
            self.active = self.outstanding = 1
            first = self._next_locked()
            self._spawn_locked()
        self._chain(first)
        self.done.wait()

    def _next_locked(self) -> Optional[int]:
        if self.cheap:
            return self.cheap.pop()
        return self.ready.popleft() if self.ready else None

    def _spawn_locked(self) -> None:
        while self.ready and self.active < self.plan.parallelism:
            self.active += 1
            self.outstanding += 1
            _POOL.submit(self._chain, self.ready.popleft())

    def _chain(self, i: Optional[int]) -> None:
        plan = self.plan
        while i is not None:
            blocking = plan.blocking[i]
            if blocking:
                with self.lock:
                    self.active -= 1
                    self._spawn_locked()
            ok = plan._execute(i, self.values, self.ctx, self.stats)
            with self.lock:
                if blocking:
                    self.active += 1
                if ok:
                    for s in plan.successors[i]:
                        self.pending[s] -= 1
                        if self.pending[s] == 0:
                            (self.cheap if plan.cheap[s] else self.ready).append(s)
                i = self._next_locked() if ok else None
                if ok:
                    self._spawn_locked()
                if i is None:
                    self.active -= 1
                    self.outstanding -= 1
                    if self.outstanding == 0:
                        self.done.set()


# Kernels too cheap to be worth a thread hop: run on whichever thread is there.
_CHEAP = frozenset({"Const", "Identity", "NoOp", "VariableV2", "Placeholder",
                    "PlaceholderWithDefault", "Shape", "Reshape", "_Send", "Fill"})


def _make_kernel(node: Node, device):
    try:
        return get_kernel_factory(node.op, device.device_type)(node, device)
    except errors.OpError as e:
        raise type(e)(None, None, f"{e.message} (node {node.name})",
                      node_name=node.name) from None
    except (ValueError, TypeError, KeyError) as e:
        raise errors.InvalidArgumentError(
            None, None, f"Cannot build kernel for node {node.name} ({node.op}): {e}",
            node_name=node.name) from None


def _as_op_error(e: Exception, node_name: str) -> errors.OpError:
    if isinstance(e, errors.OpError):
        name = e.node_name or node_name
        if name in e.message:
            e.node_name = name
            return e
        # Like TF, the message names the failing node (it must survive the wire).
        cls = errors.exception_type_from_error_code(e.error_code)
        return cls(e.node_def, e.op, f"{e.message}\n\t [[{{{{node {name}}}}}]]",
                   node_name=name)
    message = f"{e}\n\t [[{{{{node {node_name}}}}}]]"
    if isinstance(e, (ValueError, TypeError, IndexError, ZeroDivisionError)):
        return errors.InvalidArgumentError(None, None, message, node_name=node_name)
    if isinstance(e, MemoryError):
        return errors.ResourceExhaustedError(None, None, message, node_name=node_name)
    return errors.UnknownError(None, None, f"{type(e).__name__}: {message}",
                               node_name=node_name)


def _topological(nodes: list[Node]) -> list[Node]:
    by_name = {n.name: n for n in nodes}
    order, state = [], {}
    for root in nodes:
        if root.name in state:
            continue
        stack = [(root.name, iter(root.inputs))]
        state[root.name] = 1
        while stack:
            name, it = stack[-1]
            for ref in it:
                src = parse_input(ref)[0]
                if src not in by_name:
                    raise errors.InvalidArgumentError(
                        None, None, f"Node '{name}' has an input from unknown node '{src}'")
                if state.get(src) == 1:
                    raise errors.InvalidArgumentError(
                        None, None, f"Graph has a cycle through node '{src}'")
                if src not in state:
                    state[src] = 1
                    stack.append((src, iter(by_name[src].inputs)))
                    break
            else:
                stack.pop()
                state[name] = 2
                order.append(by_name[name])
    return order
