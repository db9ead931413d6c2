"""The executor of partitions that hold control flow: frames, iterations and dead tensors.

Rule: a partition with no control-flow op runs on `executor.Executor`, whose
hot path knows nothing of this module (`make_executor` picks once, when the
partition is registered). Here, as in TF's executor:

- Every value is tagged with a frame instance and an iteration. An Enter
  moves its value into a child frame (created on first use, iteration 0;
  a constant Enter's value reaches every iteration), an Exit back to the
  parent, a NextIteration into the next iteration, which starts only while
  fewer than `parallel_iterations` of its frame are in flight (otherwise it
  waits for the oldest to end).
- A Switch leaves its untaken output DEAD. An op with a dead input (data or
  control) does not run: its outputs are dead too, so an untaken branch runs
  nothing, side effects included. A Merge is ready at its first live input
  (forwarding it and its index), and dead only once every input it can get
  this iteration is dead. A dead NextIteration is dropped (that is how a
  loop ends); a dead Exit reaches the parent only when its frame is done.
  A ControlTrigger runs and is live even when its inputs are dead (TF's
  gradients of conds in loops sync their stacks through one).
- A control-flow `_Send`/`_Recv` pair (attr `_cf`, set by the partitioner)
  runs even when dead, carrying the deadness, and keys its tensor with the
  frame and iteration, so a loop's iterations and a branch's deadness cross
  devices and tasks (`master_worker/control_flow_partition.py`).

One thread dispatches: cheap kernels run on it; blocking ones (a Recv, a
dequeue) on the shared pool, reporting back through a queue.
"""
from __future__ import annotations

import collections
import queue
import threading
import time
from typing import Optional

import numpy as np

from nbcluster import errors
from nbcluster.framework.node import Node, parse_input
from nbcluster.framework.op_registry import get_op_def
from nbcluster.runtime.dead_tensor import DEAD
from nbcluster.runtime.executor import _POOL, Executor
from nbcluster.runtime.planning import as_op_error, make_kernel

# Op types that need this executor (TensorArray and stack kernels keep
# per-step state that only it provides).
CONTROL_FLOW_OPS = frozenset({
    "Switch", "RefSwitch", "Merge", "RefMerge", "Enter", "RefEnter", "Exit", "RefExit",
    "NextIteration", "RefNextIteration", "LoopCond", "ControlTrigger",
    "TensorArrayV3", "TensorArrayWriteV3", "TensorArrayReadV3", "TensorArrayGatherV3",
    "TensorArrayScatterV3", "TensorArrayConcatV3", "TensorArraySplitV3",
    "TensorArraySizeV3", "TensorArrayCloseV3", "TensorArrayGradV3",
    "StackV2", "StackPushV2", "StackPopV2", "StackCloseV2"})

_NORMAL, _SWITCH, _MERGE, _ENTER, _EXIT, _NEXT, _SEND, _RECV, _FETCH, _TRIGGER = range(10)
_KINDS = {"Switch": _SWITCH, "RefSwitch": _SWITCH, "Merge": _MERGE, "RefMerge": _MERGE,
          "Enter": _ENTER, "RefEnter": _ENTER, "Exit": _EXIT, "RefExit": _EXIT,
          "NextIteration": _NEXT, "RefNextIteration": _NEXT, "ControlTrigger": _TRIGGER}


def needs_frames(nodes: list) -> bool:
    """Whether a partition of `nodes` must run on the FrameExecutor."""
    return any(n.op in CONTROL_FLOW_OPS or n.attrs.get("_cf") for n in nodes)


def make_executor(nodes: list, device, parallelism: int = 1):
    """The executor for one partition: frames only where the partition has control flow."""
    if needs_frames(nodes):
        return FrameExecutor(nodes, device, parallelism)
    return Executor(nodes, device, parallelism)


class FrameContext:
    """A kernel's StepContext inside a frame: the step's, plus `frame_iter`."""

    __slots__ = ("_ctx", "frame_iter")

    def __init__(self, ctx, frame_iter: str) -> None:
        self._ctx = ctx
        self.frame_iter = frame_iter

    def __getattr__(self, name):
        return getattr(self._ctx, name)


class FrameExecutor:
    """An executable plan of one partition with control flow, on one device."""

    def __init__(self, nodes: list[Node], device, parallelism: int = 1) -> None:
        self.device = device
        self.nodes = list(nodes)
        index: dict = {}
        for i, node in enumerate(self.nodes):
            if node.name in index:
                raise errors.InvalidArgumentError(None, None, f"Node '{node.name}' is not unique",
                                                  node_name=node.name)
            index[node.name] = i
        n = len(self.nodes)
        self.names = [node.name for node in self.nodes]
        self.kinds = [_NORMAL] * n
        self.wiring: list = [()] * n          # per data slot: (src, k, deref)
        self.num_control = [0] * n
        self.back: list = [()] * n            # Merge: which slots come from a NextIteration
        self.edges: list = [[] for _ in range(n)]  # src -> [(k, dst, slot)]; k = slot = -1: control
        self.kernels: list = [None] * n
        self.blocking = [False] * n
        self.enters: dict = collections.Counter()  # frame name -> Enter nodes here
        op_defs: dict = {}

        def op_def(op):
            return op_defs.get(op) or op_defs.setdefault(op, get_op_def(op))

        for i, node in enumerate(self.nodes):
            d = op_def(node.op)
            kind = _KINDS.get(node.op, _NORMAL)
            if node.op in ("_Send", "_Recv"):
                if node.attrs.get("client_terminated"):
                    kind = _FETCH if node.op == "_Send" else _NORMAL
                elif node.attrs.get("_cf"):
                    kind = _SEND if node.op == "_Send" else _RECV
            self.kinds[i] = kind
            if kind == _ENTER:
                self.enters[node.attrs["frame_name"]] += 1
            wiring, back = [], []
            for slot, ref in enumerate(node.inputs):
                src_name, k = parse_input(ref)
                if src_name not in index:
                    raise errors.InvalidArgumentError(
                        None, None, f"Node '{node.name}' has an input from unknown node "
                                    f"'{src_name}'", node_name=node.name)
                src = index[src_name]
                if k < 0:
                    self.num_control[i] += 1
                    self.edges[src].append((-1, i, -1))
                    continue
                deref = k in op_def(self.nodes[src].op).ref_outputs and slot not in d.ref_inputs
                self.edges[src].append((k, i, len(wiring)))
                back.append(_KINDS.get(self.nodes[src].op) == _NEXT)
                wiring.append((src, k, deref))
            self.wiring[i] = tuple(wiring)
            self.back[i] = tuple(back)
            self.blocking[i] = d.blocking and not node.attrs.get("client_terminated")
            self.kernels[i] = make_kernel(node, device)
        self.roots = [i for i in range(n) if not self.wiring[i] and not self.num_control[i]]

    def run(self, ctx) -> Optional[list]:
        """Runs the partition's step; returns raw stats rows if `ctx.collect_stats`."""
        stats = [] if ctx.collect_stats else None
        ctx.step_state = {}   # TensorArrays and stacks of this step (kernels/control_flow_*)
        try:
            with np.errstate(all="ignore"):  # for every kernel, as in Executor.run
                _Run(self, ctx, stats).run()
        finally:  # tensors sent to peers, who fetch them (counted by the `_Send` kernels)
            ctx.remote_sent = ctx.step_state.get("remote_sent", 0)
        if ctx.cancellation.error is not None:
            raise ctx.cancellation.error
        return stats


class _Frame:
    __slots__ = ("name", "id", "parent", "parent_iter", "iters", "pending_enters", "consts",
                 "parallel", "count", "deferred", "dead_exits", "live_exits")

    def __init__(self, name, frame_id, parent, parent_iter, pending_enters, parallel):
        self.name, self.id = name, frame_id
        self.parent, self.parent_iter = parent, parent_iter
        self.iters: dict = {}          # iteration -> _Iteration, oldest first
        self.pending_enters = pending_enters
        self.consts: list = []         # (dst, slot, value, dead) every iteration gets
        self.parallel = max(1, parallel)
        self.count = 0                 # iterations started
        self.deferred: collections.deque = collections.deque()  # (dst, slot, value)
        self.dead_exits: set = set()
        self.live_exits: set = set()


class _Iteration:
    __slots__ = ("index", "outstanding", "pending", "key", "ctx")

    def __init__(self, index: int, key: str, ctx) -> None:
        self.index = index
        self.outstanding = 0     # ready or running ops, and child frames not done
        self.pending: dict = {}  # node -> _Pending
        self.key = key
        self.ctx = ctx


class _Pending:
    __slots__ = ("left", "dead", "slots", "controls", "dead_data", "expected", "live", "fired")

    def __init__(self, plan: FrameExecutor, i: int, iteration: int) -> None:
        n_data = len(plan.wiring[i])
        self.slots: list = [None] * n_data
        self.dead = False
        if plan.kinds[i] == _MERGE:
            back = plan.back[i]
            if any(back):
                self.expected = sum(1 for b in back if b == (iteration > 0))
            else:
                self.expected = n_data
            self.controls = plan.num_control[i]
            self.dead_data = 0
            self.live = None
            self.fired = False
        else:
            self.left = n_data + plan.num_control[i]


class _Run:
    """One step of a FrameExecutor; every field is touched by the dispatching thread only."""

    def __init__(self, plan: FrameExecutor, ctx, stats) -> None:
        self.plan, self.ctx, self.stats = plan, ctx, stats
        self.ready: collections.deque = collections.deque()  # (node, frame, iteration, dead)
        self.frames: dict = {}
        self.done_q: queue.SimpleQueue = queue.SimpleQueue()
        self.running = 0
        self.root = _Frame("", "0", None, 0, 0, 1)
        self._new_iteration(self.root, 0)

    def run(self) -> None:
        plan, ctx = self.plan, self.ctx
        root_iter = self.root.iters[0]
        for i in plan.roots:
            self._ready(i, self.root, root_iter, False)
        while True:
            while self.ready and ctx.cancellation.error is None:
                i, frame, it, dead = self.ready.popleft()
                self._execute(i, frame, it, dead)
            if ctx.cancellation.error is not None or not self.running:
                return
            i, frame, it, dead, outs = self.done_q.get()
            self.running -= 1
            if outs is not None:
                self._finish(i, frame, it, dead, outs)

    # -- running one node --------------------------------------------------
    def _execute(self, i: int, frame: _Frame, it: _Iteration, dead: bool) -> None:
        plan = self.plan
        kind = plan.kinds[i]
        if kind == _MERGE:
            pending = it.pending[i]
            value, index = pending.live if pending.live is not None else (DEAD, -1)
            if value is DEAD:
                outs = (DEAD, DEAD)
            else:
                if plan.wiring[i][index][2]:
                    value = value.read()
                outs = (value, _int32(index))
            self._finish(i, frame, it, value is DEAD, outs)
            return
        pending = it.pending.pop(i)
        if kind == _TRIGGER:  # runs, live, even on dead inputs (TF's gradient loops rely on it)
            dead = False
        if dead and kind not in (_SEND, _RECV, _FETCH):
            self._finish(i, frame, it, True, (DEAD,) * self._arity(i))
            return
        args = pending.slots
        for slot, (_, _, deref) in enumerate(plan.wiring[i]):
            if deref and args[slot] is not DEAD:
                args[slot] = args[slot].read()
        if kind == _FETCH and dead:
            self.ctx.cancellation.cancel(errors.InvalidArgumentError(
                None, None, f"Retval of {plan.nodes[i].attrs.get('tensor_name')} does not have "
                            f"value: it is dead (on a branch of control flow not taken)",
                node_name=plan.names[i]))
            return
        if kind == _RECV and dead:
            args = []
        kctx = it.ctx
        if plan.blocking[i]:
            self.running += 1
            _POOL.submit(self._run_async, i, frame, it, dead, kctx, args)
            return
        outs = self._call(i, kctx, args)
        if outs is not None:
            self._finish(i, frame, it, dead, outs)

    def _run_async(self, i, frame, it, dead, kctx, args) -> None:
        outs = None
        try:
            with np.errstate(all="ignore"):
                outs = self._call(i, kctx, args)
        finally:
            self.done_q.put((i, frame, it, dead, outs))

    def _call(self, i: int, kctx, args) -> Optional[tuple]:
        stats = self.stats
        wall = time.time() if stats is not None else 0.0
        try:
            outs = self.plan.kernels[i](kctx, *args)
        except Exception as e:  # noqa: BLE001 - every kernel failure becomes an OpError
            self.ctx.cancellation.cancel(as_op_error(e, self.plan.names[i]))
            return None
        if stats is not None:
            stats.append((i, wall, time.time(), threading.get_ident(), outs))
        return outs

    def _arity(self, i: int) -> int:
        return max((k for k, _, _ in self.plan.edges[i]), default=-1) + 1 \
            if self.plan.kinds[i] != _SWITCH else 2

    # -- moving values ----------------------------------------------------
    def _finish(self, i: int, frame: _Frame, it: _Iteration, dead: bool, outs) -> None:
        """Hands node `i`'s outputs to its consumers; then `it` may be done."""
        plan = self.plan
        kind = plan.kinds[i]
        if kind == _RECV and outs and outs[0] is DEAD:
            dead = True
        if dead and kind in (_SEND, _RECV):
            outs = (DEAD,) * len(outs)
        edges = plan.edges[i]
        if kind == _ENTER:
            node = plan.nodes[i]
            child = self._child(frame, it, node.attrs["frame_name"],
                                int(node.attrs.get("parallel_iterations", 10) or 10))
            child.pending_enters -= 1
            if node.attrs.get("is_constant"):
                for k, dst, slot in edges:
                    value = outs[k] if k >= 0 else None
                    d = dead if k < 0 else value is DEAD
                    child.consts.append((dst, slot, value, d))
                    for target in list(child.iters.values()):
                        self._deliver(dst, slot, value, d, child, target)
            else:
                target = child.iters.get(0)
                if target is not None:
                    for k, dst, slot in edges:
                        value = outs[k] if k >= 0 else None
                        self._deliver(dst, slot, value, dead if k < 0 else value is DEAD,
                                      child, target)
            self._cleanup(child)
        elif kind == _EXIT:
            if dead:
                frame.dead_exits.add(i)
            else:
                frame.live_exits.add(i)
                parent = frame.parent
                target = parent.iters[frame.parent_iter]
                for k, dst, slot in edges:
                    self._deliver(dst, slot, outs[k] if k >= 0 else None, False, parent, target)
        elif kind == _NEXT:
            if not dead:
                for k, dst, slot in edges:
                    self._deliver_next(frame, it.index + 1, dst, slot,
                                       outs[k] if k >= 0 else None)
        else:
            for k, dst, slot in edges:
                if k >= 0:
                    value = outs[k]
                    self._deliver(dst, slot, value, value is DEAD, frame, it)
                else:  # a Switch itself ran: its control edges are live
                    self._deliver(dst, slot, None, dead and kind != _SWITCH, frame, it)
        it.outstanding -= 1
        self._cleanup(frame)

    def _deliver(self, dst: int, slot: int, value, dead: bool, frame: _Frame,
                 it: _Iteration) -> None:
        pending = it.pending.get(dst)
        if pending is None:
            pending = it.pending[dst] = _Pending(self.plan, dst, it.index)
        if self.plan.kinds[dst] == _MERGE:
            if pending.fired:  # later inputs this iteration are ignored
                return
            if slot < 0:
                pending.controls -= 1
            elif dead:
                pending.dead_data += 1
            elif pending.live is None:
                pending.live = (value, slot)
            if pending.controls == 0 and (pending.live is not None or
                                          pending.dead_data >= pending.expected):
                pending.fired = True
                self._ready(dst, frame, it, pending.live is None)
            return
        if slot >= 0:
            pending.slots[slot] = value
        pending.dead = pending.dead or dead
        pending.left -= 1
        if pending.left == 0:
            self._ready(dst, frame, it, pending.dead)

    def _ready(self, i: int, frame: _Frame, it: _Iteration, dead: bool) -> None:
        if i not in it.pending:
            it.pending[i] = _Pending(self.plan, i, it.index)
        it.outstanding += 1
        self.ready.append((i, frame, it, dead))

    def _deliver_next(self, frame: _Frame, index: int, dst: int, slot: int, value) -> None:
        it = frame.iters.get(index)
        if it is None:
            if frame.deferred or len(frame.iters) >= frame.parallel:
                frame.deferred.append((index, dst, slot, value))
                return
            it = self._new_iteration(frame, index)
        self._deliver(dst, slot, value, False, frame, it)

    # -- frames and iterations --------------------------------------------
    def _child(self, frame: _Frame, it: _Iteration, name: str, parallel: int) -> _Frame:
        key = (id(frame), it.index, name)
        child = self.frames.get(key)
        if child is None:
            child = _Frame(name, f"{frame.id}/{it.index}/{name}", frame, it.index,
                           self.plan.enters[name], parallel)
            self.frames[key] = child
            it.outstanding += 1  # the parent iteration lasts until the child frame is done
            self._new_iteration(child, 0)
        return child

    def _new_iteration(self, frame: _Frame, index: int) -> _Iteration:
        key = f"{frame.id}:{index}"
        it = _Iteration(index, key, self.ctx if frame.parent is None
                        else FrameContext(self.ctx, key))
        frame.iters[index] = it
        frame.count = max(frame.count, index + 1)
        for dst, slot, value, dead in frame.consts:
            self._deliver(dst, slot, value, dead, frame, it)
        return it

    def _cleanup(self, frame: _Frame) -> None:
        """Ends the oldest iterations of `frame` that are done, starts deferred
        ones, and ends the frame once nothing of it can run any more."""
        if frame.parent is None:
            return
        while frame.iters and frame.pending_enters == 0:
            oldest = next(iter(frame.iters.values()))
            if oldest.outstanding:
                return
            del frame.iters[oldest.index]
            while frame.deferred:
                index, dst, slot, value = frame.deferred[0]
                it = frame.iters.get(index)
                if it is None:
                    if len(frame.iters) >= frame.parallel:
                        break
                    it = self._new_iteration(frame, index)
                frame.deferred.popleft()
                self._deliver(dst, slot, value, False, frame, it)
        if frame.iters or frame.deferred or frame.pending_enters:
            return
        del self.frames[(id(frame.parent), frame.parent_iter, frame.name)]
        parent = frame.parent
        target = parent.iters[frame.parent_iter]
        for i in frame.dead_exits - frame.live_exits:
            for k, dst, slot in self.plan.edges[i]:
                self._deliver(dst, slot, DEAD if k >= 0 else None, True, parent, target)
        target.outstanding -= 1
        self._cleanup(parent)


def _int32(index: int):
    return np.int32(index)
