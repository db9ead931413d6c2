"""Python and numpy values as the ndarrays TensorFlow makes of them (float -> float32,
str -> bytes objects): no graph, so graph building and graph serialization share it."""
from __future__ import annotations

from typing import Optional

import numpy as np

from nbcluster.framework import dtypes


def to_numpy(value, dtype: Optional[dtypes.DType] = None) -> np.ndarray:
    """A Python/numpy value as the ndarray TF would make of it (float -> float32)."""
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
        if dtype == dtypes.string:
            return _string_array(value)
        array = np.asarray(value)
        if array.dtype.kind in "OSU":
            raise TypeError(f"Expected {dtype.name}, got {value!r} of type "
                            f"'{type(value).__name__}' instead.")
        if isinstance(value, np.ndarray) and array.dtype != dtype.as_numpy_dtype \
                and not _fits(array, dtype):
            raise TypeError(f"Cannot convert array of dtype {array.dtype} to "
                            f"{dtype.name}: {value!r}")
        converted = array.astype(dtype.as_numpy_dtype, copy=False)
        if array.dtype.kind == "f" and dtype.is_integer and not np.array_equal(converted, array):
            raise TypeError(f"Expected {dtype.name}, got {value!r} of type "
                            f"'{type(value).__name__}' instead.")
        return converted
    array = np.asarray(value)
    if array.dtype.kind in "OSU":
        return _string_array(value)
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return array
    if array.dtype == np.float64:
        return array.astype(np.float32)
    if array.dtype == np.int64 and array.size and \
            np.abs(array).max() < 2 ** 31:
        return array.astype(np.int32)
    if array.dtype == np.int64 and not array.size:
        return array.astype(np.int32)
    return array


def _fits(array: np.ndarray, dtype: dtypes.DType) -> bool:
    # numpy scalars and float->float are allowed to narrow, as TF does for literals
    return array.ndim == 0 or (array.dtype.kind == "f" and dtype.is_floating)


def _string_array(value) -> np.ndarray:
    array = np.asarray(value, dtype=object)
    flat = [v.encode("utf-8") if isinstance(v, str) else v for v in array.reshape(-1)]
    for v in flat:
        if not isinstance(v, bytes):
            raise TypeError(f"Expected string, got {v!r} of type '{type(v).__name__}'")
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(array.shape)
