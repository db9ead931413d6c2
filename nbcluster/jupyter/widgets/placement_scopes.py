"""What PlacementView draws: job → task → device boxes, big name scopes folded, edges merged.

Rule: a pure function of (Placement, expanded scopes, threshold, budget); the
result is plain JSON (the widget's synced `view`), laid out by dagre in the
browser.

Inside each device box a name scope with more than `threshold` ops is one
node, "scope/ (N ops)", unless the scope is in `expanded`: then it is a box
of its own (click it to fold it again) holding its ops and sub-scopes, each
folded by the same rule. Smaller scopes are drawn op by op while the level
(a device box or an open scope) stays within `budget` nodes; past it they
fold too, biggest first. An op whose name is the scope's name ("w" beside
"w/read") belongs to that scope. Edges between the drawn nodes are merged
per (source, target, kind) with a count; a transfer edge sums its bytes.
"""
from __future__ import annotations

import re
from collections import Counter

from nbcluster.jupyter.widgets.devices import UNPLACED, color_of, place_of
from nbcluster.jupyter.widgets.placement_model import CLIENT, Placement
from nbcluster.jupyter.widgets.units import format_bytes

DEFAULT_THRESHOLD = 6   # a scope with more ops than this is folded
DEFAULT_BUDGET = 40     # and smaller ones too while a level shows more nodes than this
CLIENT_COLOR = "#FFFFFF"
SERIES_MARK = "*"       # "layer_*": the scopes layer_0, layer_1, … drawn as one node
SERIES_MIN = 3          # numbered siblings that make a series
_NUMBERED = re.compile(r"^(?P<stem>.*?[^\d])(?P<num>\d+)$")


def device_chain(device: str) -> list:
    """The boxes a device sits in, outermost first: [(id, label, kind)].

    Args:
      device: a canonical device name ("" for unplaced ops).

    Returns:
      job, task and device boxes; a level the name lacks, or that would
      repeat the level above ("/job:ps/task:0" is its task), is left out.
    """
    if not device:
        return [("dev:", "unplaced", "device")]
    place = place_of(device)
    chain = []
    if place.job:
        chain.append((f"job:/job:{place.job}", f"/job:{place.job}", "job"))
    if place.task:
        chain.append((f"task:{place.task}", place.task, "task"))
    if device not in (place.task, f"/job:{place.job}"):
        label = device[device.index("/device:"):] if place.task and "/device:" in device \
            else device
        chain.append((f"dev:{device}", label, "device"))
    return chain


class _View:
    """Accumulates groups, nodes and edges for one `view_data` call."""

    def __init__(self, placement: Placement, expanded, threshold: int, budget: int) -> None:
        self.placement = placement
        self.expanded = set(expanded)
        self.threshold, self.budget = threshold, budget
        devices = placement.devices
        self.colors = {d: color_of(d, devices) for d in devices}
        self.colors.update({CLIENT: CLIENT_COLOR, "": UNPLACED})
        self.groups: dict = {}
        self.nodes: dict = {}
        self.rep: dict = {}  # op name -> drawn node id

    def device_box(self, device: str) -> str:
        parent, chain = None, device_chain(device)
        for i, (gid, label, kind) in enumerate(chain):
            # only the innermost box is tinted: it is the device
            color = self.colors.get(device, UNPLACED) if i == len(chain) - 1 else "#FFFFFF"
            self.groups.setdefault(gid, {"id": gid, "label": label, "kind": kind,
                                         "parent": parent, "color": color, "scope": ""})
            parent = gid
        return parent

    def place_all(self) -> None:
        by_device: dict = {}
        for op in self.placement.ops.values():
            by_device.setdefault(op.device, []).append(op)
        for device, ops in by_device.items():
            parent = self.device_box(device)
            if device == CLIENT:  # feeds and fetches: few, and never a scope
                for op in ops:
                    self.add_op(op, parent, "")
            else:
                self.level(device, "", ops, parent)

    def level(self, device: str, base: str, ops: list, parent: str) -> None:
        """Draws the ops under scope `base` of one device: each child scope
        folded, open (a box), or inline when it is small and room is left."""
        depth = base.count("/") + 1 if base else 0
        items: dict = {}
        for op in ops:
            items.setdefault("/".join(op.name.split("/")[:depth + 1]), []).append(op)
        scopes = {k: m for k, m in items.items() if not (len(m) == 1 and m[0].name == k)}
        fold = {k for k, m in scopes.items() if len(m) > self.threshold and k not in self.expanded}
        visible = sum(1 if k in fold or k in self.expanded else len(m) for k, m in items.items())
        # Many small scopes (a variable's 3 ops on a ps, per layer) fold too,
        # biggest first, until this level fits its budget.
        for key in sorted((k for k in scopes if k not in fold and k not in self.expanded),
                          key=lambda k: -len(scopes[k])):
            if visible <= self.budget or len(scopes[key]) < 2:
                break
            fold.add(key)
            visible -= len(scopes[key]) - 1
        series = self.series_of(base, items, fold, visible)
        drawn = set()
        for key, members in items.items():
            if key in series:
                skey, skeys = series[key]
                if skey not in drawn:
                    drawn.add(skey)
                    self.add_series(device, skey, skeys, items, parent, base)
            elif key in scopes and key in self.expanded:
                self.level(device, key, members, self.scope_box(device, key, members, parent, base))
            elif key in fold:
                self.add_scope(device, key, members, parent, base)
            else:
                for op in members:
                    self.add_op(op, parent, base)

    def series_of(self, base: str, items: dict, fold: set, visible: int) -> dict:
        """Numbered siblings ("layer_0" … "layer_41") drawn as one node while the
        level is over budget: {item key: (series key "layer_*", its item keys)}.
        A series opens (its members drawn one by one) when its key is expanded."""
        if visible <= self.budget:
            return {}
        stems: dict = {}
        for key in items:
            match = _NUMBERED.match(key.rsplit("/", 1)[-1])
            if match:
                stem = f"{base}/{match['stem']}" if base else match["stem"]
                stems.setdefault(stem + SERIES_MARK, []).append(key)
        found = {}
        # biggest series first, until the level fits its budget
        for skey, keys in sorted(stems.items(), key=lambda kv: -len(kv[1])):
            if visible <= self.budget or len(keys) < SERIES_MIN:
                break
            if skey in self.expanded:
                continue
            visible -= sum(1 if k in fold else len(items[k]) for k in keys) - 1
            found.update({k: (skey, keys) for k in keys})
        return found

    def add_series(self, device: str, skey: str, keys: list, items: dict, parent: str,
                   base: str) -> None:
        members = [op for k in keys for op in items[k]]
        numbers = sorted(int(_NUMBERED.match(k.rsplit("/", 1)[-1])["num"]) for k in keys)
        rel = skey[len(base) + 1:] if base else skey
        label = f"{rel[:-len(SERIES_MARK)]}{numbers[0]}…{numbers[-1]} ({len(members)} ops)"
        self.add_scope(device, skey, members, parent, base, label=label)

    def scope_box(self, device: str, scope: str, members: list, parent: str, base: str) -> str:
        gid = f"scope:{device}|{scope}/"
        rel = scope[len(base) + 1:] if base else scope
        self.groups[gid] = {"id": gid, "label": f"{rel}/ ({len(members)} ops)", "kind": "scope",
                            "parent": parent, "color": self.colors.get(device, UNPLACED),
                            "scope": scope}
        return gid

    def add_scope(self, device: str, scope: str, members: list, parent: str, base: str,
                  label: str = "") -> None:
        nid = f"{device}|{scope}/"
        rel = scope[len(base) + 1:] if base else scope
        times = [o.time_us for o in members if o.time_us is not None]
        self.nodes[nid] = {
            "id": nid, "label": label or f"{rel}/ ({len(members)} ops)", "kind": "scope",
            "scope": scope, "name": scope + "/", "op": f"{len(members)} ops", "dtype": "",
            "shape": "", "device": device, "requested": "", "parent": parent,
            "count": len(members), "color": self.colors.get(device, UNPLACED),
            "time_us": sum(times) if times else None, "start_us": None}
        for op in members:
            self.rep[op.name] = nid

    def add_op(self, op, parent: str, base: str) -> None:
        nid = f"op:{op.name}"
        self.nodes[nid] = {
            "id": nid, "label": op.name[len(base) + 1:] if base else op.name, "kind": "op",
            "scope": "", "name": op.name, "op": op.op, "dtype": op.dtype, "shape": op.shape,
            "device": op.device, "requested": op.requested, "parent": parent, "count": 1,
            "color": self.colors.get(op.device, UNPLACED), "time_us": op.time_us,
            "start_us": op.start_us}
        self.rep[op.name] = nid

    def edges(self) -> list:
        merged: dict = {}  # (source, target, kind) -> edge

        def add(src: str, dst: str, kind: str, transfer=None) -> None:
            s, d = self.rep.get(src), self.rep.get(dst)
            if s is None or d is None or s == d:
                return
            edge = merged.setdefault((s, d, kind), {"source": s, "target": d, "kind": kind,
                                                     "count": 0, "bytes": None, "tensors": [],
                                                     "sizes": {}})
            edge["count"] += 1
            if transfer is not None and transfer.tensor not in edge["tensors"]:
                edge["tensors"].append(transfer.tensor)
                # per tensor, so the browser can bundle edges without counting one twice
                edge["sizes"][f"{transfer.src_device}>{transfer.tensor}"] = transfer.bytes
                if transfer.bytes is not None:
                    edge["bytes"] = (edge["bytes"] or 0) + transfer.bytes

        covered = set()
        for t in self.placement.transfers:
            for consumer in t.dst_nodes:
                covered.add((t.src_node, consumer))
                add(t.src_node, consumer, "transfer", t)
        for op in self.placement.ops.values():
            for kind, sources in (("data", op.inputs), ("control", op.control_inputs)):
                for src in sources:
                    if (src, op.name) not in covered:
                        add(src, op.name, kind)
        out = []
        for i, edge in enumerate(merged.values()):
            times = f" ×{edge['count']}" if edge["count"] > 1 else ""
            if edge["kind"] != "transfer":
                edge["label"] = times.strip()
            elif all(t.startswith("^") for t in edge["tensors"]):  # only control edges
                edge["label"] = "control" + times
            else:
                edge["label"] = format_bytes(edge["bytes"]) + times
            edge["id"] = f"e{i}"
            out.append(edge)
        return out


def view_data(placement: Placement, expanded=(), threshold: int = DEFAULT_THRESHOLD,
              budget: int = DEFAULT_BUDGET) -> dict:
    """The JSON the placement widget draws.

    Args:
      placement: ops and transfers (placement_model / placement_metadata).
      expanded: scope paths to show open ("gradients", "layer_3").
      threshold: a scope with more ops than this (on one device) is folded.
      budget: smaller scopes fold too while a level shows more nodes than this.

    Returns:
      {"groups": [...] (parents before children), "nodes": [...],
       "edges": [...], "legend": [...], "summary": {...}, "names": every op's
      name (the search box's), "timed": whether any op has a measured time}.
    """
    view = _View(placement, expanded, threshold, budget)
    view.place_all()
    ops = [o for o in placement.ops.values() if o.device != CLIENT]
    per_device = Counter(o.device for o in placement.ops.values())
    legend = [{"device": d or "unplaced", "color": view.colors.get(d, UNPLACED),
               "ops": per_device[d]} for d in sorted(per_device, key=lambda d: (d == CLIENT, d))]
    known = [t.bytes for t in placement.transfers if t.bytes is not None]
    return {
        "groups": list(view.groups.values()), "nodes": list(view.nodes.values()),
        "edges": view.edges(), "legend": legend,
        # every op, for the search box (which opens the scopes that hold a match)
        "names": [o.name for o in ops],
        "timed": any(o.time_us is not None for o in ops),
        "summary": {"ops": len(ops), "devices": len(placement.devices),
                    "transfers": len(placement.transfers), "bytes": sum(known),
                    "actual": placement.actual, "visible": len(view.nodes),
                    # echoed, so a lower budget that folds nothing more still
                    # answers the browser with a new view
                    "budget": budget},
    }
