"""Placement: every node of a pruned graph gets one full device name.

Rule: a pure function of (nodes, devices, options); no I/O. Nodes that must
share a device (colocate_with's `_class`, and ref/resource inputs that point
at a variable or queue) are placed as one group.
"""
from __future__ import annotations

from typing import Callable

from nbcluster import errors
from nbcluster.framework import dtypes
from nbcluster.framework.device_spec import DeviceSpec, is_compatible
from nbcluster.framework.node import Node, parse_input
from nbcluster.framework.op_registry import get_op_def
from nbcluster.ops import functional

_TYPE_PRIORITY = {"GPU": 0, "CPU": 1}


def place(nodes: dict[str, Node], devices: list[str], default_task: tuple,
          allow_soft_placement: bool, has_kernel: Callable[[str, str], bool]) -> dict:
    """Returns {node name: full device name}.

    Args:
      nodes: the pruned graph, by name.
      devices: full names of every device the session may use.
      default_task: (job, task) whose devices take nodes with no job/task pinned.
      allow_soft_placement: relax an unsatisfiable device type/index.
      has_kernel: (op type, device type) -> whether a kernel exists.
    Raises:
      InvalidArgumentError: a device string is malformed, names no known
        device, or colocated nodes ask for different devices.
    """
    specs = {d: DeviceSpec.from_string(d) for d in devices}
    groups, consumers = _colocation_groups(nodes)
    placement: dict[str, str] = {}
    for members in groups:
        device = _place_group([nodes[m] for m in members], specs, default_task,
                              allow_soft_placement, has_kernel, consumers)
        for m in members:
            placement[m] = device
    return placement


def _colocation_groups(nodes: dict[str, Node]) -> tuple:
    """(groups of node names, the names joined to theirs by a ref or resource input)."""
    parent = {name: name for name in nodes}
    consumers: set = set()

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        if a in parent and b in parent:
            parent[find(a)] = find(b)

    for node in nodes.values():
        for group in node.attrs.get("_class", ()) or ():
            if isinstance(group, str) and group.startswith("loc:@"):
                union(node.name, group[5:])
        ref_inputs = get_op_def(node.op).ref_inputs
        if functional.is_functional(node.op):
            ref_inputs = ref_inputs | functional.pinned_inputs(node)
        elif node.attrs.get("T") == dtypes.variant:  # ZerosLike, Identity of a list
            ref_inputs = range(len(node.inputs))
        for slot, ref in enumerate(node.data_inputs()):
            if slot in ref_inputs or _is_resource(nodes, ref):
                union(node.name, parse_input(ref)[0])
                consumers.add(node.name)
    groups: dict[str, list[str]] = {}
    for name in nodes:
        groups.setdefault(find(name), []).append(name)
    return list(groups.values()), consumers


def _is_resource(nodes: dict[str, Node], ref: str) -> bool:
    """Whether input `ref` is a DT_RESOURCE handle: as TF's placer does, whatever
    consumes one (an Identity passing it on too) runs on the handle's device."""
    name, k = parse_input(ref)
    producer = nodes.get(name)
    types = producer.attrs.get("_output_types") if producer is not None else None
    return bool(types) and 0 <= k < len(types) and types[k] == dtypes.resource


def _merged_constraint(members: list[Node], allow_soft: bool,
                       consumers: frozenset = frozenset()) -> DeviceSpec:
    merged, source = DeviceSpec(), {}
    # As TF's placer, a node joined to a variable (or queue, or other resource) by a
    # ref, resource or variant edge runs where that resource is, ignoring a device
    # it asked for that differs (a function call, If or While with it: its body
    # reads it there; the lists its loop keeps stay with the loop). So the
    # resources' own devices decide; the rest fill in only what those leave open.
    anchors = {m.name for m in members
               if m.name not in consumers and get_op_def(m.op).stateful}
    if not anchors:
        anchors = {m.name for m in members if m.name not in consumers}
    for node in sorted(members, key=lambda m: m.name not in anchors):
        spec = _parse(node)
        for field in ("job", "replica", "task", "device_type", "device_index"):
            value = getattr(spec, field)
            if value is None:
                continue
            current = getattr(merged, field)
            if current is not None and current != value:
                if node.name not in anchors or \
                        allow_soft and field in ("device_type", "device_index"):
                    continue
                raise errors.InvalidArgumentError(
                    None, None, f"Cannot colocate nodes '{source[field]}' and '{node.name}': "
                                f"they ask for different {field.replace('_', ' ')}s "
                                f"({current!r} and {value!r})", node_name=node.name)
            merged = merged.replace(**{field: value})
            source.setdefault(field, node.name)
    return merged


def _parse(node: Node) -> DeviceSpec:
    try:
        return DeviceSpec.from_string(node.device)
    except errors.InvalidArgumentError as e:
        raise errors.InvalidArgumentError(
            None, None, f"Malformed device specification '{node.device}' in node "
                        f"'{node.name}': {e.message}", node_name=node.name) from None


def _place_group(members: list[Node], specs: dict, default_task: tuple,
                 allow_soft: bool, has_kernel, consumers=frozenset()) -> str:
    constraint = _merged_constraint(members, allow_soft, consumers)
    op_types = {m.op for m in members}

    def candidates(spec: DeviceSpec) -> list[str]:
        found = [d for d, s in specs.items() if is_compatible(spec, s)
                 and all(has_kernel(t, s.device_type) for t in op_types)]
        if spec.job is None and spec.task is None:
            local = [d for d in found if (specs[d].job, specs[d].task) == default_task]
            found = local or found
        return sorted(found, key=lambda d: _rank(specs[d]))

    found = candidates(constraint)
    if not found and allow_soft:
        found = candidates(constraint.replace(device_type=None, device_index=None))
    if found:
        return found[0]
    pinned = next((m for m in members if m.device), members[0])
    wanted = constraint.to_string() or pinned.device
    if pinned.device and pinned.device != wanted:  # name it as the user wrote it too
        wanted = f"{wanted} (from '{pinned.device}')"
    raise errors.InvalidArgumentError(
        None, None, f"Cannot assign a device for operation {pinned.name}: Operation was "
                    f"explicitly assigned to {wanted} but "
                    f"available devices are [ {', '.join(sorted(specs))} ]. Make sure the "
                    f"device specification refers to a valid device.",
        node_name=pinned.name)


def _rank(spec: DeviceSpec) -> tuple:
    return (_TYPE_PRIORITY.get(spec.device_type, 2), spec.job or "", spec.task or 0,
            spec.device_index or 0)

