"""Flattens nested fetches (lists, tuples, namedtuples, dicts) and rebuilds them."""
from __future__ import annotations

from typing import Callable

from nbcluster.framework.indexed_slices import IndexedSlices, IndexedSlicesValue
from nbcluster.framework.operation import Operation, Tensor


class FetchStructure:
    """Unique graph elements of a nested fetch, and how to put results back."""

    def __init__(self, graph, fetches) -> None:
        self.tensors: list[Tensor] = []
        self.ops: list[Operation] = []
        self._index: dict = {}
        self._build: Callable = self._walk(graph, fetches)
        self.tensor_names = [t.name for t in self.tensors]
        self.op_names = [op.name for op in self.ops]

    def _walk(self, graph, fetch) -> Callable:
        if fetch is None:
            raise TypeError(f"Fetch argument {fetch!r} has invalid type {type(fetch)}, must "
                            f"be a string or Tensor. (Can not convert a NoneType into a "
                            f"Tensor or Operation.)")
        if isinstance(fetch, (list, tuple)) and not hasattr(fetch, "_fields"):
            parts = [self._walk(graph, f) for f in fetch]
            kind = type(fetch)
            return lambda values: kind(p(values) for p in parts)
        if isinstance(fetch, tuple):  # namedtuple
            parts = [self._walk(graph, f) for f in fetch]
            kind = type(fetch)
            return lambda values: kind(*(p(values) for p in parts))
        if isinstance(fetch, IndexedSlices):
            # Fetched as its three tensors, handed back as TF's IndexedSlicesValue.
            parts = [self._walk(graph, t) if t is not None else (lambda values: None)
                     for t in (fetch.values, fetch.indices, fetch.dense_shape)]
            return lambda values: IndexedSlicesValue(*(p(values) for p in parts))
        if isinstance(fetch, dict):
            parts = {k: self._walk(graph, v) for k, v in fetch.items()}
            kind = type(fetch)
            return lambda values: kind((k, p(values)) for k, p in parts.items())
        try:
            element = graph.as_graph_element(fetch)
        except TypeError as e:
            raise TypeError(f"Fetch argument {fetch!r} has invalid type {type(fetch)}, must "
                            f"be a string or Tensor. ({e})") from None
        except (KeyError, ValueError) as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. "
                             f"({e})") from None
        if isinstance(element, Operation):
            if element not in self.ops:
                self.ops.append(element)
            return lambda values: None
        key = element.name
        if key not in self._index:
            self._index[key] = len(self.tensors)
            self.tensors.append(element)
        index = self._index[key]
        return lambda values: values[index]

    def build(self, values: list):
        return self._build(values)


def fetch_key(fetch):
    """A hashable key, equal for fetches of the same structure and elements
    (so a session can reuse their FetchStructure); None if there is none."""
    if isinstance(fetch, (list, tuple)):
        parts = tuple(fetch_key(f) for f in fetch)
        return None if None in parts else (type(fetch), parts)
    if isinstance(fetch, dict):
        items = []
        for k, v in fetch.items():
            part = fetch_key(v)
            if part is None or fetch_key(k) is None:
                return None
            items.append((k, part))
        return (type(fetch), tuple(items))
    if fetch is None:
        return None
    try:
        hash(fetch)
    except TypeError:
        return None
    return (type(fetch), fetch)
