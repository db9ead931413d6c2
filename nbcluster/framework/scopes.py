"""TF1's module-level scope functions, acting on the default graph."""
from __future__ import annotations

from nbcluster.framework.graph import get_default_graph, graph_of


def name_scope(name, default_name=None, values=None):
    """`with name_scope("layer") as scope:` — scope is "layer/" (uniqued)."""
    graph = graph_of(*(values or ()))
    if name is None and default_name is None:
        return graph.name_scope(None)
    return graph.name_scope(name if name is not None else default_name)


def device(device_name_or_function):
    return get_default_graph().device(device_name_or_function)


def colocate_with(op, ignore_existing: bool = False):
    return graph_of(op).colocate_with(op, ignore_existing)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def container(container_name: str):
    return get_default_graph().container(container_name)


def get_collection(key: str, scope=None) -> list:
    items = get_default_graph().get_collection(key)
    return [i for i in items if not scope or getattr(i, "name", "").startswith(scope)]


def add_to_collection(name: str, value) -> None:
    get_default_graph().add_to_collection(name, value)
