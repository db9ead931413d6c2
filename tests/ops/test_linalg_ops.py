"""Linear-algebra ops: MatMul and BatchMatMulV2 against numpy, static shapes,
build-time errors, and the `@` operator."""
import numpy as np
import pytest
from op_checks import check, run, sample

import nbcluster as tf
from nbcluster.ops import linalg

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul(dtype, ta, tb):
    a, b = sample((3, 4), dtype, -3, 3), sample((4, 2), dtype, -3, 3)
    a_in, b_in = (a.T if ta else a), (b.T if tb else b)
    t = linalg.matmul(tf.constant(a_in), tf.constant(b_in), transpose_a=ta, transpose_b=tb)
    assert t.op.type == "MatMul" and t.shape.as_list() == [3, 2]
    assert t.op.get_attr("transpose_a") == ta and t.op.get_attr("T") == tf.as_dtype(dtype)
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(dtype)
    tol = 1e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(run(t), expected, rtol=tol, atol=tol)
    assert run(t).dtype == dtype


def test_matmul_static_shapes_and_errors():
    x = tf.placeholder(tf.float32, [None, 3])
    assert linalg.matmul(x, tf.zeros([3, 5])).shape.as_list() == [None, 5]
    assert linalg.matmul(x, tf.placeholder(tf.float32, [None, None])).shape.as_list() == [None, None]
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 3 and 4 .*"
                                         r"\[\?,3\], \[4,5\]"):
        linalg.matmul(x, tf.zeros([4, 5]))
    with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1"):
        linalg.matmul(tf.zeros([2, 3]), tf.zeros([3]))
    with pytest.raises(TypeError, match="does not match"):
        linalg.matmul(tf.zeros([2, 3]), tf.constant(np.zeros((3, 2), np.float64)))
    with pytest.raises(ValueError, match="Only one of transpose_a and adjoint_a"):
        linalg.matmul(x, x, transpose_a=True, adjoint_a=True)


def test_batch_matmul_broadcasts_batch_dims():
    a, b = sample((2, 1, 3, 4), np.float64), sample((5, 4, 2), np.float64)
    t = linalg.matmul(tf.constant(a), tf.constant(b))
    assert t.op.type == "BatchMatMulV2" and t.shape.as_list() == [2, 5, 3, 2]
    check(run(t), a @ b, np.float64)
    t = linalg.matmul(tf.constant(b), tf.constant(a), adjoint_a=True, adjoint_b=True)
    check(run(t), np.swapaxes(b, -1, -2) @ np.swapaxes(a, -1, -2), np.float64)
    assert linalg.matmul(tf.placeholder(tf.float64), tf.constant(b)).shape.rank is None


def test_matmul_operator_builds_ops_named_matmul():
    a = sample((2, 3), np.float32)
    x = tf.constant(a)
    forward, reflected = x @ a.T, a @ tf.constant(a.T)
    assert [forward.op.name, reflected.op.name] == ["matmul", "matmul_1"]
    assert forward.op.type == reflected.op.type == "MatMul"
    assert reflected.op.inputs[0].op.name == "matmul_1/a"
    for t in (forward, reflected):
        check(run(t), a @ a.T, np.float32)
