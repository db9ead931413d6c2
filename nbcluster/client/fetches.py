"""Flattens nested fetches (lists, tuples, namedtuples, dicts) and rebuilds them."""
from __future__ import annotations

from typing import Callable

from nbcluster.framework.operation import Operation, Tensor


class FetchStructure:
    """Unique graph elements of a nested fetch, and how to put results back."""

    def __init__(self, graph, fetches) -> None:
        self.tensors: list[Tensor] = []
        self.ops: list[Operation] = []
        self._index: dict = {}
        self._build: Callable = self._walk(graph, fetches)

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
