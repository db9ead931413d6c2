"""tf.import_graph_def: a GraphDef's nodes added to a graph, as TF's importer.

Its own module since it builds ops in a graph while `graph_def` only converts
(the graph serializes itself through `graph_def`).
"""
from __future__ import annotations

import contextlib
from typing import Optional

from nbcluster.framework.graph import get_default_graph
from nbcluster.framework.graph_def import nodes_from_proto
from nbcluster.framework.node import parse_input


def import_graph_def(graph_def, input_map: Optional[dict] = None,
                     return_elements: Optional[list] = None, name: Optional[str] = None,
                     graph=None):
    """Adds `graph_def`'s nodes to the default graph under the prefix `name`."""
    graph = graph or get_default_graph()
    # TF's keys: "op:1", or a bare "op" meaning output 0.
    input_map = {"%s:%d" % parse_input(k) if not k.startswith("^") else k: v
                 for k, v in (input_map or {}).items()}
    nodes = {n.name: n for n in nodes_from_proto(graph_def)}
    prefix = name if name is not None else "import"
    created: dict = {}
    back_edges: list = []  # (Merge, input slot, NextIteration name, index): a loop's
    with graph.name_scope(prefix or None) as scope:
        for node in _topological(nodes):
            inputs, controls, later = [], [], []
            for ref in node.inputs:
                src, index = parse_input(ref)
                if index < 0:
                    controls.append(created[src])
                    continue
                key = f"{src}:{index}"
                if key in input_map:
                    inputs.append(input_map.pop(key))
                elif src in created:
                    inputs.append(created[src].outputs[index])
                else:  # a back edge, wired once its NextIteration exists
                    later.append((len(inputs), src, index))
                    inputs.append(None)
            placeholder = next((t for t in inputs if t is not None), None)
            if later and placeholder is None:
                raise ValueError(f"Node '{node.name}' ({node.op}) has only back-edge inputs")
            for slot, _, _ in later:
                inputs[slot] = placeholder
            # The node's own device is the innermost scope: enclosing device
            # scopes fill in what it leaves unset, as in TF's importer.
            with graph.control_dependencies(controls), \
                    graph.device(node.device) if node.device else contextlib.nullcontext():
                op = graph.create_op(node.op, inputs, dict(node.attrs),
                                     name=scope + node.name + "/")
            created[node.name] = op
            back_edges.extend((op, slot, src, index) for slot, src, index in later)
    for op, slot, src, index in back_edges:
        op._update_input(slot, created[src].outputs[index])
    if input_map:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: "
                         f"[{', '.join(sorted(input_map))}]")
    if return_elements is None:
        return None
    return [graph.as_graph_element(scope + e) for e in return_elements]


# A Merge's input from a NextIteration closes a while loop's cycle: the only
# cycle a GraphDef may hold (TF's importer makes the same exception).
_BACK_EDGE_SOURCES = frozenset({"NextIteration", "RefNextIteration"})


def _topological(nodes: dict) -> list:
    order, state = [], {}

    def visit(name: str, path: tuple) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            raise ValueError(f"GraphDef has a cycle through node '{name}'")
        if name not in nodes:
            raise ValueError(f"Node '{path[-1]}' has an input from unknown node '{name}'")
        state[name] = 1
        merge = nodes[name].op in ("Merge", "RefMerge")
        for ref in nodes[name].inputs:
            src = parse_input(ref)[0]
            if merge and not ref.startswith("^") and src in nodes and \
                    nodes[src].op in _BACK_EDGE_SOURCES:
                continue
            visit(src, path + (name,))
        state[name] = 2
        order.append(nodes[name])

    for name in nodes:
        visit(name, (name,))
    return order
