"""Runs one device partition: planned once, then executed every step.

Rule: all per-graph work (topological order, kernel construction, input
wiring) happens in `Executor.__init__`; `run` only moves values.
Ready nodes run inline on the thread that made them ready. A thread wake
costs about 0.1 ms on a small host, so a ready branch goes to the shared pool
only when its kernel takes long enough (`_SPAWN_MIN_S`, over recent steps) and fewer
than `parallelism` chains of this step are active, and only in a plan where
two such kernels could run at once: when each needs the one before (a
layer's forward and backward MatMuls), the whole run stays on the calling
thread, which would only wait for a pool thread. A chain entering a
blocking kernel (a remote Recv, dequeue) stops counting as active, so blocked
branches never starve the rest. A Recv whose tensor lands in this step's
rendezvous by itself (a same-task send, or a stream the worker opened) never
takes a thread: the step waits for whichever of those lands first; when
those are a plan's only blocking nodes, its run takes no lock either.
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Optional

import numpy as np

from nbcluster import errors
from nbcluster.framework.node import Node, parse_input
from nbcluster.framework.op_registry import get_op_def
from nbcluster.runtime.planning import as_op_error, make_kernel, topological
from nbcluster.runtime.thread_pool import DaemonPool

_POOL = DaemonPool(max_workers=64, thread_name_prefix="nbcluster-exec")
# Below this a kernel finishes before a woken thread would start it.
_SPAWN_MIN_S = 0.0001


class Executor:
    """An executable plan of one partition's nodes on one device."""

    def __init__(self, nodes: list[Node], device, parallelism: int = 1) -> None:
        self.device = device
        self.parallelism = max(1, parallelism)
        self.nodes = topological(nodes)
        index = {n.name: i for i, n in enumerate(self.nodes)}
        n = len(self.nodes)
        self.names = [node.name for node in self.nodes]
        self.kernels: list = [None] * n
        self.inputs: list = [None] * n
        self.blocking = [False] * n
        # A feed's _Recv only reads a value already there: cheap, never blocking.
        feeds = [n.op == "_Recv" and bool(n.attrs.get("client_terminated")) for n in self.nodes]
        self.cheap = [node.op in _CHEAP or fed for node, fed in zip(self.nodes, feeds)]
        # Seconds each kernel takes (its recent runs, as `_execute` smooths them):
        # 0 until it ran, so a first step runs inline and later ones spread only
        # what is worth a thread.
        self.cost = [0.0] * n
        succ: list = [set() for _ in range(n)]
        pending = [0] * n
        op_defs: dict = {}
        for i, node in enumerate(self.nodes):
            op_def = op_defs.get(node.op) or op_defs.setdefault(node.op, get_op_def(node.op))
            self.blocking[i] = op_def.blocking and not feeds[i]
            wiring, preds = [], set()
            for slot, ref in enumerate(node.inputs):
                src_name, k = parse_input(ref)
                src = index[src_name]
                preds.add(src)
                if k >= 0:
                    src_op = self.nodes[src].op
                    src_def = op_defs.get(src_op) or op_defs.setdefault(src_op,
                                                                        get_op_def(src_op))
                    deref = k in src_def.ref_outputs and slot not in op_def.ref_inputs
                    wiring.append((src, k, deref))
            self.inputs[i] = tuple(wiring)
            pending[i] = len(preds)
            for p in preds:
                succ[p].add(i)
            self.kernels[i] = make_kernel(node, device)
        # A value is dropped once its last consumer ran, so a variable's array
        # that only this step read can be updated in place (kernels/training.py).
        self.uses = [0] * n
        last = [-1] * n
        for i, wiring in enumerate(self.inputs):
            for src, _, _ in wiring:
                self.uses[src] += 1
                last[src] = i
        release: list = [[] for _ in range(n)]
        for src, i in enumerate(last):
            if i >= 0:
                release[i].append(src)
        self.release_after = [tuple(r) for r in release]  # in topological order
        self.successors = [tuple(sorted(s)) for s in succ]
        self.pending = pending
        self.roots = [i for i in range(n) if pending[i] == 0]
        # A Recv kernel names its rendezvous key; if the tensor lands here by
        # itself, the step can wait for it without giving it a thread.
        self.recv_keys = [getattr(k, "rendezvous_key", None) if b else None
                          for k, b in zip(self.kernels, self.blocking)]
        self.any_blocking = any(self.blocking)
        # The blocking nodes' keys when all are Recvs (None else): `_all_land`.
        keys = [key for key, b in zip(self.recv_keys, self.blocking) if b]
        self._blocking_keys = tuple(keys) if None not in keys else None
        # Only sends to other devices are worth holding back (`run`), and only
        # spreading branches over threads needs kernel timings.
        self.remote_sends = any(node.op == "_Send" and not node.attrs.get("client_terminated")
                                for node in self.nodes)
        self.timed = self.parallelism > 1
        self._spread_seen: dict = {}  # costly nodes -> whether two of them are independent
        self._template, self._program = self._inline_program()

    def _inline_program(self) -> tuple:
        """The run on the calling thread, planned once: every node in topological
        order, less those that compute nothing. A NoOp has no outputs; a Const's
        value is the same array every step (put in the run's first values); an
        Identity of a value (not a variable's read, which must happen in its
        place in the order) forwards it, so its consumers read its input instead.
        Each entry: (node, kernel, wiring, values to drop after it)."""
        template: list = [None] * len(self.nodes)
        forward: dict = {}  # an elided Identity -> the (source, output) it forwards
        kept = []
        for i, node in enumerate(self.nodes):
            wiring = tuple(forward.get(src, (src, k)) + (deref,) if k == 0 else (src, k, deref)
                           for src, k, deref in self.inputs[i])
            if node.op == "NoOp":
                continue
            if node.op == "Const" and not wiring:
                template[i] = self.kernels[i](None)
                continue
            if node.op == "Identity" and len(wiring) == 1 and not wiring[0][2]:
                forward[i] = wiring[0][:2]
                continue
            kept.append((i, wiring))
        last: dict = {}
        for i, wiring in kept:
            for src, _, _ in wiring:
                last[src] = i
        release: dict = {}
        for src, i in last.items():
            release.setdefault(i, []).append(src)
        # A cheap or blocking kernel never gets a thread (`_StepRun._push_locked`):
        # only the others need their time.
        program = tuple((i, self.kernels[i], *_arguments(wiring), tuple(release.get(i, ())),
                         self.timed and not (self.blocking[i] or self.cheap[i]))
                        for i, wiring in kept)
        return template, program

    def run(self, ctx) -> Optional[list]:
        """Runs every node once; returns raw stats rows if `ctx.collect_stats`."""
        stats = [] if ctx.collect_stats else None
        # Sends wake their receivers in batches: before this run waits, and at its end.
        held = self.remote_sends and getattr(ctx.rendezvous, "hold", None) is not None
        if held:
            ctx.rendezvous.hold()
        try:
            with np.errstate(all="ignore"):  # every kernel's: TF's warn about nothing
                if not self.any_blocking and (self.parallelism == 1 or not self._spread_pays()):
                    if stats is None:
                        self._run_inline(ctx)
                    else:  # every node, for its stats row
                        values: list = [None] * len(self.nodes)
                        release = self.release_after
                        for i in range(len(self.nodes)):
                            if not self._execute(i, values, ctx, stats):
                                break
                            for src in release[i]:
                                values[src] = None
                elif self._all_land(ctx.rendezvous) and (self.parallelism == 1
                                                         or not self._spread_pays()):
                    self._run_landing(ctx, stats, ctx.rendezvous.flush if held else _nothing)
                else:
                    _StepRun(self, ctx, stats, held).run()
        finally:
            if held:
                ctx.rendezvous.unhold()
        if ctx.cancellation.error is not None:
            raise ctx.cancellation.error
        return stats

    def _run_inline(self, ctx) -> None:
        """`_execute` of every node of the planned program, on this thread."""
        values = list(self._template)
        cancellation, cost = ctx.cancellation, self.cost
        clock = time.perf_counter
        for i, kernel, n, a, j, b, k, wiring, release, timed in self._program:
            if cancellation.error is not None:
                return
            if timed:
                start = clock()
            try:
                if n == 2:  # the common cases: up to two inputs, no variable's read
                    values[i] = kernel(ctx, values[a][j], values[b][k])
                elif n == 1:
                    values[i] = kernel(ctx, values[a][j])
                elif n == 0:
                    values[i] = kernel(ctx)
                else:
                    values[i] = kernel(ctx, *[values[src][k].read() if deref else values[src][k]
                                              for src, k, deref in wiring])
            except Exception as e:  # noqa: BLE001 - every kernel failure becomes an OpError
                cancellation.cancel(as_op_error(e, self.names[i]))
                return
            if timed:
                took, last = clock() - start, cost[i]
                # A preempted kernel looks slow once: a rise counts an eighth, a fall all.
                cost[i] = took if took < last or not last else last + (took - last) * 0.125
            for src in release:
                values[src] = None

    def _all_land(self, rendezvous) -> bool:
        """Whether every blocking node is a Recv whose tensor lands here by itself
        (this step's streams: the worker opens them before the run)."""
        lands = getattr(rendezvous, "lands_here", None)
        keys = self._blocking_keys
        return lands is not None and keys is not None and all(lands(key) for key in keys)

    def _run_landing(self, ctx, stats, flush) -> None:
        """A dataflow run on this thread alone, for a plan whose only blocking
        nodes are Recvs that land here (a PS worker's step): the ready nodes
        run first, then the run waits for whichever waiting Recv lands first.
        `_StepRun` does the same with a lock and a pool; one thread needs neither."""
        values: list = [None] * len(self.nodes)
        pending, uses = list(self.pending), list(self.uses)
        inputs, successors, recv_keys = self.inputs, self.successors, self.recv_keys
        ready = list(reversed(self.roots))  # popped from the end: in topological order
        waiting: dict = {}  # Recv node -> its key, until its tensor lands
        # Every Recv not run yet: the wait may be for any of them before the run ends.
        unrun = {i: key for i, key in enumerate(recv_keys) if key is not None}
        rendezvous = ctx.rendezvous
        landed: set = set()
        while True:
            while ready:
                i = ready.pop()
                key = recv_keys[i]
                if key is not None:
                    if i not in landed:
                        waiting[i] = key
                        continue
                    del unrun[i]
                if not self._execute(i, values, ctx, stats):
                    return
                for src, _, _ in inputs[i]:
                    uses[src] -= 1
                    if not uses[src]:
                        values[src] = None
                for s in reversed(successors[i]):
                    pending[s] -= 1
                    if not pending[s]:
                        ready.append(s)
            if not waiting:
                return
            here = rendezvous.landed(waiting.values())
            if not here:
                flush()  # a peer may wait for what this run sent before it sends back
                try:
                    rendezvous.wait_any(lambda: list(waiting.values()), ctx,
                                        lambda: list(unrun.values()))
                except errors.OpError as e:
                    ctx.cancellation.cancel(as_op_error(e, self.names[next(iter(waiting))]))
                    return
                here = rendezvous.landed(waiting.values())
            for i in [i for i, key in waiting.items() if key in here]:
                del waiting[i]
                landed.add(i)
                ready.append(i)

    def _spread_pays(self) -> bool:
        """Whether two kernels that took long enough last step to be worth a thread
        could run at once (neither needs the other). When every such kernel needs
        the one before, a second thread would only wait: the run stays on this one."""
        costly = tuple(i for i, c in enumerate(self.cost) if c >= _SPAWN_MIN_S)
        if len(costly) < 2:
            return False
        pays = self._spread_seen.get(costly)
        if pays is None:
            if len(self._spread_seen) >= _SPREAD_MEMO:
                self._spread_seen.clear()
            pays = self._spread_seen[costly] = _any_independent(costly, self.successors)
        return pays

    def _execute(self, i: int, values: list, ctx, stats) -> bool:
        if ctx.cancellation.error is not None:
            return False
        args = []
        for src, k, deref in self.inputs[i]:
            value = values[src][k]
            args.append(value.read() if deref else value)
        start = time.perf_counter() if self.timed else 0.0
        wall = time.time() if stats is not None else 0.0
        try:
            values[i] = self.kernels[i](ctx, *args)
        except Exception as e:  # noqa: BLE001 - every kernel failure becomes an OpError
            ctx.cancellation.cancel(as_op_error(e, self.names[i]))
            return False
        if self.timed and not self.blocking[i]:
            took, last = time.perf_counter() - start, self.cost[i]
            # A preempted kernel looks slow once: a rise counts an eighth, a fall all.
            self.cost[i] = took if took < last or not last else last + (took - last) * 0.125
        if stats is not None:
            stats.append((i, wall, time.time(), threading.get_ident(), values[i]))
        return True


class _StepRun:
    """The mutable state of one dataflow run of an Executor."""

    def __init__(self, plan: Executor, ctx, stats, held: bool = False) -> None:
        self.plan, self.ctx, self.stats = plan, ctx, stats
        self.flush = ctx.rendezvous.flush if held else _nothing
        self.values: list = [None] * len(plan.nodes)
        self.pending = list(plan.pending)
        self.uses = list(plan.uses)  # consumers of each value yet to run
        self.lock = threading.Lock()
        self.inline: list = []             # ready nodes this chain runs itself
        self.ready: collections.deque = collections.deque()  # worth a thread of their own
        self.waiting: dict = {}            # node -> key of a Recv whose tensor lands here
        self.waiter = False                # a chain is waiting for one of `waiting`
        self.wake = False                  # `waiting` grew while a chain waited on it
        self.landed: set = set()           # nodes of `waiting` whose tensor is here
        self.active = 0
        self.outstanding = 0
        self.done = threading.Event()
        rendezvous = ctx.rendezvous
        self.lands = getattr(rendezvous, "lands_here", None)
        self.landing: Optional[list] = None  # (node index, key) of Recvs landing here

    def run(self) -> None:
        with self.lock:
            for i in self.plan.roots:
                self._push_locked(i)
            self.active = self.outstanding = 1
            first = self._next_locked()
            self._spawn_locked()
        self._chain(first)
        self.done.wait()

    def _push_locked(self, i: int) -> None:
        plan = self.plan
        key = plan.recv_keys[i]
        if key is not None and self.lands is not None and self.lands(key):
            self.waiting[i] = key
            self.wake = self.waiter
        elif plan.blocking[i] or not (plan.cheap[i] or plan.cost[i] < _SPAWN_MIN_S):
            self.ready.append(i)
        else:
            self.inline.append(i)

    def _next_locked(self) -> Optional[int]:
        if self.inline:
            return self.inline.pop()
        if self.waiting:
            landed = self.ctx.rendezvous.landed(self.waiting.values())
            for i in [i for i, key in self.waiting.items() if key in landed]:
                del self.waiting[i]
                self.landed.add(i)
                self.inline.append(i)
            if self.inline:
                return self.inline.pop()
        return self.ready.popleft() if self.ready else None

    def _spawn_locked(self) -> None:
        while self.ready and self.active < self.plan.parallelism:
            self.active += 1
            self.outstanding += 1
            _POOL.submit(self._pool_chain, self.ready.popleft())

    def _pool_chain(self, i: Optional[int], wait_first: bool = False) -> None:
        with np.errstate(all="ignore"):  # a pool thread has numpy's defaults
            self._chain(i, wait_first)

    def _chain(self, i: Optional[int], wait_first: bool = False) -> None:
        if wait_first:
            i = self._wait_for_landing()
        while True:
            while i is not None:
                i = self._after(i, self._run_node(i))
            with self.lock:
                self.active -= 1
                leave = not self.waiting or self.waiter or \
                    self.ctx.cancellation.error is not None
                if leave:
                    self.outstanding -= 1
                    last = self.outstanding == 0
                else:
                    self.waiter = True  # nothing else to run: wait here, not on a new thread
                    self._spawn_locked()
            if leave:
                # Another chain may be blocked on a peer that waits for what we sent.
                self.flush()
                if last:
                    self.done.set()
                return
            i = self._wait_for_landing()

    def _run_node(self, i: int) -> bool:
        plan = self.plan
        if not plan.blocking[i] or i in self.landed:
            return plan._execute(i, self.values, self.ctx, self.stats)
        with self.lock:  # blocked, it must not hold a slot others could use
            self.active -= 1
            self._spawn_locked()
            # Nor may it keep the Recvs that wait for landing tensors unseen.
            waiter = bool(self.waiting) and not self.waiter
            if waiter:
                self.waiter = True
                self.outstanding += 1
        if waiter:
            _POOL.submit(self._pool_chain, None, True)
        self.flush()
        try:
            return plan._execute(i, self.values, self.ctx, self.stats)
        finally:
            with self.lock:
                self.active += 1

    def _wait_for_landing(self) -> Optional[int]:
        """Waits (as the step's only such waiter) until a tensor of `waiting` lands."""
        waiting = self.waiting
        self.flush()
        try:
            self.ctx.rendezvous.wait_any(lambda: list(waiting.values()), self.ctx,
                                         self._could_want)
        except errors.OpError as e:
            first = next(iter(list(waiting)), None)  # a Recv still waiting names the error
            self.ctx.cancellation.cancel(e if first is None
                                         else as_op_error(e, self.plan.names[first]))
        with self.lock:
            self.waiter = False
            self.active += 1
            if self.ctx.cancellation.error is not None:
                return None
            return self._next_locked()

    def _could_want(self) -> list:
        """The keys of every Recv of this run whose tensor lands here and that
        has not run: the waiter may wait for any of them before it is done,
        including those not yet ready (`StepRendezvous.wait_any`)."""
        if self.landing is None:
            self.landing = [(i, key) for i, key in enumerate(self.plan.recv_keys)
                            if key is not None and self.lands(key)]
        values = self.values
        return [key for i, key in self.landing if values[i] is None]

    def _after(self, i: int, ok: bool) -> Optional[int]:
        """Makes `i`'s successors ready; returns the next node for this chain."""
        plan = self.plan
        with self.lock:
            if not ok:
                return None
            values, uses = self.values, self.uses
            for src, _, _ in plan.inputs[i]:
                uses[src] -= 1
                if not uses[src]:
                    values[src] = None
            for s in plan.successors[i]:
                self.pending[s] -= 1
                if self.pending[s] == 0:
                    self._push_locked(s)
            wake, self.wake = self.wake, False
            keys = list(self.waiting.values()) if wake else None
            nxt = self._next_locked()
            self._spawn_locked()
        if wake:
            self.ctx.rendezvous.want(keys)
        return nxt


def _nothing() -> None:
    pass


def _arguments(wiring: tuple) -> tuple:
    """(n, a, j, b, k, wiring) of an inline program's entry: n inputs, up to two
    that are no variable's read, output j of node a and output k of node b;
    else n = -1 (`wiring` then)."""
    if len(wiring) <= 2 and not any(deref for _, _, deref in wiring):
        flat = [x for src, out, _ in wiring for x in (src, out)] + [0] * 4
        return (len(wiring), *flat[:4], wiring)
    return (-1, 0, 0, 0, 0, wiring)


# Sets of costly nodes remembered per plan (they change when kernel times cross
# _SPAWN_MIN_S); past this many costly nodes, independence is assumed unchecked.
_SPREAD_MEMO = 16
_SPREAD_CHECKED = 64


def _any_independent(costly: tuple, successors: list) -> bool:
    """Whether some two of `costly` are unordered: neither reaches the other along
    `successors` (so a dataflow run could give each its own thread)."""
    if len(costly) > _SPREAD_CHECKED:
        return True
    wanted = set(costly)
    for i in costly:
        reached, stack = set(), list(successors[i])
        while stack:
            j = stack.pop()
            if j not in reached:
                reached.add(j)
                stack.extend(successors[j])
        # In topological order, `i` reaches only later nodes: each later costly
        # one must be reached, or the two are independent.
        if any(j > i and j not in reached for j in wanted):
            return True
    return False


# Kernels too cheap to be worth a thread hop: run on whichever thread is there.
_CHEAP = frozenset({"Const", "Identity", "NoOp", "VariableV2", "Placeholder",
                    "PlaceholderWithDefault", "Shape", "Reshape", "_Send", "Fill"})
