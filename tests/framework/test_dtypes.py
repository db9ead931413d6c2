"""DTypes: TF's enum values, numpy mapping and `as_dtype` conversions."""
import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("dtype, enum, np_dtype", [
    (tf.float32, 1, np.float32), (tf.float64, 2, np.float64), (tf.int32, 3, np.int32),
    (tf.uint8, 4, np.uint8), (tf.int16, 5, np.int16), (tf.int8, 6, np.int8),
    (tf.int64, 9, np.int64), (tf.bool, 10, np.bool_), (tf.float16, 19, np.float16),
    (tf.complex64, 8, np.complex64),
])
def test_enum_and_numpy(dtype, enum, np_dtype):
    assert dtype.as_datatype_enum == enum
    assert dtype.as_numpy_dtype is np_dtype
    assert tf.as_dtype(enum) is dtype and tf.as_dtype(np_dtype) is dtype
    assert tf.as_dtype(np.dtype(np_dtype)) is dtype and tf.as_dtype(dtype.name) is dtype


def test_string_and_aliases():
    assert tf.string.as_datatype_enum == 7 and tf.as_dtype("string") is tf.string
    assert tf.as_dtype(str) is tf.string and tf.as_dtype(bytes) is tf.string
    assert tf.half is tf.float16 and tf.double is tf.float64
    assert tf.as_dtype("double") is tf.float64 and tf.as_dtype(bool) is tf.bool
    assert tf.as_dtype(101) is tf.float32  # float32_ref


def test_predicates_and_equality():
    assert tf.float32.is_floating and not tf.float32.is_integer
    assert tf.int64.is_integer and tf.bool.is_bool and not tf.string.is_numeric
    assert tf.float32 == "float32" and tf.float32 != tf.float64 and tf.float32 == np.float32
    assert tf.float32.base_dtype is tf.float32 and tf.float64.itemsize == 8
    assert repr(tf.int32) == "tf.int32" and len({tf.int32, tf.as_dtype(3)}) == 1


def test_bad_conversion():
    with pytest.raises(TypeError):
        tf.as_dtype("floaty")
    with pytest.raises(TypeError):
        tf.as_dtype(12345)
