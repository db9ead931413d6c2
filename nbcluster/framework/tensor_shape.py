"""Static tensor shapes: a rank and per-dimension sizes, each possibly unknown."""
from __future__ import annotations

from typing import Optional


class TensorShape:
    """A possibly partial shape: `None` rank is unknown, a `None` dim is unknown."""

    __slots__ = ("_dims",)

    def __init__(self, dims) -> None:
        if dims is None:
            self._dims: Optional[tuple] = None
        elif isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif isinstance(dims, (int,)) and not isinstance(dims, bool):
            self._dims = (_as_dim(dims),)
        else:
            self._dims = tuple(_as_dim(d) for d in dims)

    @property
    def rank(self) -> Optional[int]:
        return None if self._dims is None else len(self._dims)

    ndims = rank

    @property
    def dims(self):
        return None if self._dims is None else list(self._dims)

    def as_list(self) -> list:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_fully_defined(self) -> bool:
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self) -> Optional[int]:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_compatible_with(self, other) -> bool:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other) -> "TensorShape":
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def assert_is_compatible_with(self, other) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(self._dims)

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            return None if isinstance(key, int) else unknown_shape()
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return self._dims[key]

    def __bool__(self) -> bool:
        return self._dims is not None

    def __eq__(self, other) -> bool:
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __hash__(self) -> int:
        return hash(self._dims)

    def __repr__(self) -> str:
        return "TensorShape(None)" if self._dims is None else f"TensorShape({list(self._dims)})"

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        inner = ", ".join("None" if d is None else str(d) for d in self._dims)
        return f"({inner},)" if len(self._dims) == 1 else f"({inner})"


def _as_dim(d) -> Optional[int]:
    if d is None or d == -1:
        return None
    try:
        value = int(d)
    except (TypeError, ValueError):
        raise TypeError(f"Dimension value must be an int or None, got {d!r}") from None
    if value != d or value < 0:
        raise ValueError(f"Dimension {d!r} must be a non-negative integer or None")
    return value


def as_shape(shape) -> TensorShape:
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def unknown_shape(rank: Optional[int] = None) -> TensorShape:
    return TensorShape(None if rank is None else [None] * rank)


def scalar() -> TensorShape:
    return TensorShape([])


def broadcast(a: TensorShape, b: TensorShape, op_name: str = "") -> TensorShape:
    """NumPy broadcasting of static shapes; raises ValueError naming both."""
    if a.rank is None or b.rank is None:
        return unknown_shape()
    out: list = []
    da, db = list(a), list(b)
    for i in range(1, max(len(da), len(db)) + 1):
        x = da[-i] if i <= len(da) else 1
        y = db[-i] if i <= len(db) else 1
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        elif x == y:
            out.append(x)
        else:
            where = f" for '{op_name}'" if op_name else ""
            raise ValueError(f"Dimensions must be equal, but are {x} and {y}{where} "
                             f"with input shapes: {list_str(a)}, {list_str(b)}.")
    return TensorShape(out[::-1])


def list_str(shape: TensorShape) -> str:
    if shape.rank is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


