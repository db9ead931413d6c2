"""Frames that span partitions: a control loop per partition, and the frame of
each control-flow Recv.

Rule (TF's design, in its simplest form): a while loop's predicate lives where
its LoopCond runs (the frame's home). Every other partition holding ops of
the frame gets a skeleton loop of its own, driven by that predicate:
Enter(Const) -> Merge -> Switch(Merge, Recv(LoopCond)) -> Identity (the
pivot) -> NextIteration -> Merge. It runs exactly the home loop's iterations,
so each iteration of the partition's ops has a frame and iteration to key
its tensors by. Every control-flow Recv in a frame waits for its partition's
pivot of that frame (the predicate's own Recv for its Merge instead), which
puts it in the frame, and, dead in the last iteration, keeps it in step with
its Send (both run every iteration, live or dead: `send_recv.py`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from nbcluster import errors
from nbcluster.framework import dtypes
from nbcluster.framework.node import Node, parse_input

_ENTER = ("Enter", "RefEnter")
_EXIT = ("Exit", "RefExit")
_BACK = ("NextIteration", "RefNextIteration")


class Frames:
    """Each node's frame (where it runs, where its outputs go) and each frame's parent."""

    def __init__(self, nodes: list) -> None:
        by_name = {n.name: n for n in nodes}
        self.runs: dict = {}     # node -> frame it runs in ("" is the root)
        self.out: dict = {}      # node -> frame its outputs (and control edges) go to
        self.parent: dict = {"": None}
        self.preds: dict = {}    # frame -> the node producing its loop predicate
        for node in _order(nodes, by_name):
            frame = ""
            for ref in node.inputs:
                src = parse_input(ref)[0]
                if src in self.out and not (node.op in ("Merge", "RefMerge") and
                                            by_name[src].op in _BACK):
                    frame = self.out[src]
                    break
            self.runs[node.name] = frame
            if node.op in _ENTER:
                child = node.attrs["frame_name"]
                self.parent.setdefault(child, frame)
                self.out[node.name] = child
            elif node.op in _EXIT:
                self.out[node.name] = self.parent.get(frame, "")
            else:
                self.out[node.name] = frame
            if node.op == "LoopCond" or node.attrs.get("_control_loop_pred"):
                self.preds.setdefault(frame, by_name[parse_input(node.inputs[1])[0]]
                                      if node.attrs.get("_control_loop_pred") else node)

    def depth(self, frame: str) -> int:
        d = 0
        while frame:
            frame, d = self.parent.get(frame, ""), d + 1
        return d


def _order(nodes: list, by_name: dict) -> list:
    """`nodes` with every node after its inputs, a loop's back edges left out."""
    order, state = [], {}
    for root in nodes:
        stack = [root]
        while stack:
            node = stack[-1]
            if state.get(node.name) == 2:
                stack.pop()
                continue
            state[node.name] = 1
            merge = node.op in ("Merge", "RefMerge")
            pending = [by_name[s] for s in (parse_input(r)[0] for r in node.inputs)
                       if s in by_name and state.get(s) is None
                       and not (merge and by_name[s].op in _BACK)]
            if pending:
                stack.extend(pending)
            else:
                stack.pop()
                state[node.name] = 2
                order.append(node)
    return order


class ControlLoops:
    """The skeleton loops a partitioning adds, and each (frame, partition)'s pivot."""

    def __init__(self, nodes: list, key: Callable, taken: set) -> None:
        self.frames = Frames(nodes)
        self.key = key
        self.taken = taken
        self.added: list = []
        self.pivots: dict = {}   # (frame, part) -> pivot node name
        self.merges: dict = {}   # (frame, part) -> skeleton Merge name
        self.devices: dict = {}  # (frame, part) -> a device of that part running the frame
        self.parallel: dict = {}
        spans: dict = {}
        for node in nodes:
            frame, part = self.frames.out[node.name], key(node.device)
            if node.op in _ENTER:
                self.parallel.setdefault(frame, node.attrs.get("parallel_iterations", 10))
            for f in (self.frames.runs[node.name], frame):
                while f:
                    spans.setdefault(f, set()).add(part)
                    self.devices.setdefault((f, part), node.device)
                    f = self.frames.parent.get(f, "")
        for frame in sorted(spans, key=self.frames.depth):
            if len(spans[frame]) > 1:
                for part in sorted(spans[frame], key=str):
                    self.pivot(frame, part)

    def home(self, frame: str):
        pred = self.frames.preds.get(frame)
        if pred is None:
            raise errors.InvalidArgumentError(
                None, None, f"Frame '{frame}' spans devices but has no LoopCond to drive it")
        return pred

    def pivot(self, frame: str, part) -> str:
        """The node whose control edge puts an op of `part` into `frame`."""
        if (frame, part) in self.pivots:
            return self.pivots[(frame, part)]
        pred = self.home(frame)
        device = self.devices.get((frame, part)) or next(
            d for (f, p), d in self.devices.items() if p == part)
        if self.key(pred.device) == part:
            # Home: a Switch of the predicate on itself; its true side is live
            # exactly in the iterations that run the body.
            switch = self._add(f"{frame}/_pivot_switch", "Switch",
                               (pred.name, pred.name), pred.device, {"T": dtypes.bool})
        else:
            parent = self.frames.parent.get(frame, "")
            controls = ("^" + self.pivot(parent, part),) if parent else ()
            const = self._add(f"{frame}/_loop_start", "Const", controls, device,
                              {"dtype": dtypes.int32, "value": _zero()})
            enter = self._add(f"{frame}/_loop_enter", "Enter", (const,), device, {
                "T": dtypes.int32, "frame_name": frame, "is_constant": False,
                "parallel_iterations": self.parallel.get(frame, 10)})
            merge_name = self._name(f"{frame}/_loop_merge")
            next_name = self._name(f"{frame}/_loop_next")
            self._add(merge_name, "Merge", (enter, next_name), device,
                      {"T": dtypes.int32, "N": 2}, named=True)
            self.merges[(frame, part)] = merge_name
            switch = self._add(f"{frame}/_loop_switch", "Switch", (merge_name, pred.name),
                               device, {"T": dtypes.int32, "_control_loop_pred": True})
        pivot = self._add(f"{frame}/_pivot", "Identity", (f"{switch}:1",),
                          self._device_of(switch), {"T": dtypes.int32 if
                                                    self.key(pred.device) != part
                                                    else dtypes.bool})
        if self.key(pred.device) != part:
            self._add(next_name, "NextIteration", (pivot,), device, {"T": dtypes.int32},
                      named=True)
        self.pivots[(frame, part)] = pivot
        return pivot

    def recv_control(self, src: Node, dst_device: str):
        """The control input a Recv of `src`'s output on `dst_device` needs, or None."""
        frame = self.frames.out.get(src.name, "")
        if not frame:
            return None
        part = self.key(dst_device)
        pred = self.frames.preds.get(frame)
        if pred is not None and pred.name == src.name and (frame, part) in self.merges:
            return self.merges[(frame, part)]
        return self.pivot(frame, part)

    def _name(self, stem: str) -> str:
        name, k = stem, 0
        while name in self.taken:
            k += 1
            name = f"{stem}_{k}"
        self.taken.add(name)
        return name

    def _add(self, stem: str, op: str, inputs: tuple, device: str, attrs: dict,
             named: bool = False) -> str:
        name = stem if named else self._name(stem)
        attrs = dict(attrs)
        out = {"Switch": [attrs.get("T")] * 2, "Merge": [attrs.get("T"), dtypes.int32]}
        attrs["_output_types"] = out.get(op, [attrs.get("T") or attrs.get("dtype")])
        node = Node(name, op, tuple(inputs), device, attrs)
        self.added.append(node)
        self.frames.runs[name] = ""
        return name

    def _device_of(self, name: str) -> str:
        return next(n.device for n in self.added if n.name == name)


def _zero() -> np.ndarray:
    value = np.zeros((), np.int32)
    value.flags.writeable = False
    return value
