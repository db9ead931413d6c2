"""Data types: TF's DataType enum values paired with numpy dtypes.

Enum values equal TensorFlow's `types.proto`, so a DataType read from a TF
peer means the same thing here.
"""
from __future__ import annotations

import builtins

import numpy as np


class DType:
    """A tensor element type; compare with `==`, convert with `as_dtype`."""

    __slots__ = ("_enum", "_name", "_np")

    def __init__(self, enum: int, name: str, np_dtype) -> None:
        self._enum = enum
        self._name = name
        self._np = np_dtype

    @property
    def name(self) -> str:
        return self._name

    @property
    def as_datatype_enum(self) -> int:
        return self._enum

    @property
    def as_numpy_dtype(self):
        return self._np

    @property
    def is_floating(self) -> bool:
        return self._enum in (1, 2, 19, 14)

    @property
    def is_integer(self) -> bool:
        return self._enum in (3, 4, 5, 6, 9, 17, 22, 23)

    @property
    def is_bool(self) -> bool:
        return self._enum == 10

    @property
    def is_numeric(self) -> bool:
        return self.is_floating or self.is_integer or self._enum in (8, 18)

    @property
    def base_dtype(self) -> "DType":
        return self

    @property
    def itemsize(self) -> int:
        return np.dtype(self._np).itemsize if self._np is not object else 0

    def __eq__(self, other) -> bool:
        if isinstance(other, DType):
            return self._enum == other._enum
        try:
            return self._enum == as_dtype(other)._enum
        except TypeError:
            return NotImplemented

    def __ne__(self, other) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return self._enum

    def __repr__(self) -> str:
        return f"tf.{self._name}"

    def __reduce__(self):
        return as_dtype, (self._enum,)


float16 = half = DType(19, "float16", np.float16)
float32 = DType(1, "float32", np.float32)
float64 = double = DType(2, "float64", np.float64)
int8 = DType(6, "int8", np.int8)
int16 = DType(5, "int16", np.int16)
int32 = DType(3, "int32", np.int32)
int64 = DType(9, "int64", np.int64)
uint8 = DType(4, "uint8", np.uint8)
uint16 = DType(17, "uint16", np.uint16)
uint32 = DType(22, "uint32", np.uint32)
uint64 = DType(23, "uint64", np.uint64)
bool = DType(10, "bool", np.bool_)  # noqa: A001 - TF's public name
complex64 = DType(8, "complex64", np.complex64)
complex128 = DType(18, "complex128", np.complex128)
string = DType(7, "string", object)
resource = DType(20, "resource", object)
variant = DType(21, "variant", object)  # a tf.data dataset travels as one

_ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, uint16,
        uint32, uint64, bool, complex64, complex128, string, resource, variant)
_BY_ENUM = {d.as_datatype_enum: d for d in _ALL}
_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME.update(half=float16, double=float64)
_BY_NP = {np.dtype(d.as_numpy_dtype): d for d in _ALL if d.as_numpy_dtype is not object}


def as_dtype(value) -> DType:
    """Converts a DType, enum value, name, numpy dtype or Python type to a DType.

    Raises:
      TypeError: `value` names no supported type.
    """
    if isinstance(value, DType):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, builtins.bool):
        if int(value) in _BY_ENUM:
            return _BY_ENUM[int(value)]
        if int(value) - 100 in _BY_ENUM:  # TF's *_REF enums
            return _BY_ENUM[int(value) - 100]
    elif isinstance(value, str):
        if value in _BY_NAME:
            return _BY_NAME[value]
    elif value is builtins.bool:
        return bool
    elif value is str or value is bytes:
        return string
    else:
        try:
            npd = np.dtype(value)
        except TypeError:
            npd = None
        if npd is not None:
            if npd in _BY_NP:
                return _BY_NP[npd]
            if npd.kind in "OSU":
                return string
    raise TypeError(f"Cannot convert {value!r} to a nbcluster DType")

