"""Clipping against numpy through a real Session: clip_by_value (Minimum then
Maximum, as TF 1.15 builds it), clip_by_norm, global_norm, clip_by_global_norm;
their gradients where clipped and not, and their errors."""
import numpy as np
import pytest
from op_checks import check, run, sample

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_clip_by_value_matches_numpy(dtype):
    x = sample((3, 4), dtype)
    t = tf.clip_by_value(tf.constant(x), dtype(-2), dtype(3))
    assert t.op.type == "Maximum" and t.op.inputs[0].op.type == "Minimum"
    assert t.shape.as_list() == [3, 4] and t.dtype == tf.as_dtype(dtype)
    check(run(t), np.clip(x, -2, 3), dtype)


def test_clip_by_value_tensor_bounds_unknown_shape_and_errors():
    p = tf.placeholder(tf.float32, None)
    low = tf.placeholder(tf.float32, [])
    t = tf.clip_by_value(p, low, 1.0)
    x = sample((2, 5), np.float32)
    np.testing.assert_array_equal(run(t, {p: x, low: -1.0}), np.clip(x, -1, 1))
    assert run(t, {p: np.zeros((0, 3), np.float32), low: 0.0}).shape == (0, 3)
    with pytest.raises(ValueError, match="must not broadcast t to a larger shape"):
        tf.clip_by_value(tf.constant([1.0, 2.0]), [[0.0], [1.0]], 5.0)


def test_clip_by_value_gradient_passes_only_where_not_clipped():
    x = tf.constant([-3.0, -0.5, 0.25, 4.0], tf.float64)
    (g,) = tf.gradients(tf.reduce_sum(tf.clip_by_value(x, -1.0, 1.0) * [1.0, 2.0, 3.0, 4.0]),
                        [x])
    np.testing.assert_array_equal(run(g), [0.0, 2.0, 3.0, 0.0])


def test_clip_by_norm_whole_tensor_and_axes():
    x = sample((3, 4), np.float64)
    norm = np.sqrt((x * x).sum())
    got = run(tf.clip_by_norm(tf.constant(x), 2.0))
    np.testing.assert_allclose(got, x * 2.0 / max(norm, 2.0))
    rows = np.sqrt((x * x).sum(1, keepdims=True))
    got = run(tf.clip_by_norm(tf.constant(x), 5.0, axes=[1]))
    np.testing.assert_allclose(got, x * 5.0 / np.maximum(rows, 5.0))
    small = np.array([0.3, 0.4], np.float32)
    np.testing.assert_allclose(run(tf.clip_by_norm(small, 1.0)), small, rtol=1e-6)
    with pytest.raises(TypeError, match="'t' has DataType int32"):
        tf.clip_by_norm(tf.constant([1, 2]), 1.0)


def test_clip_by_norm_of_zeros_is_zero_with_finite_gradient():
    x = tf.constant(np.zeros(3))
    y = tf.clip_by_norm(x, 1.0)
    (g,) = tf.gradients(tf.reduce_sum(y), [x])
    out, grad = run([y, g])
    np.testing.assert_array_equal(out, np.zeros(3))
    assert np.isfinite(grad).all()


def test_global_norm_skips_none_and_checks_type():
    a, b = sample((2, 3), np.float32), sample((4,), np.float32)
    t = tf.global_norm([tf.constant(a), None, tf.constant(b)])
    assert t.shape.as_list() == [] and t.dtype == tf.float32
    expected = np.sqrt((a.astype(np.float64) ** 2).sum() + (b.astype(np.float64) ** 2).sum())
    np.testing.assert_allclose(run(t), expected, rtol=1e-5)
    with pytest.raises(TypeError, match="t_list should be a sequence"):
        tf.global_norm(tf.constant(a))


def test_clip_by_global_norm_scales_everything_by_one_factor():
    a, b = sample((2, 3), np.float64), sample((4,), np.float64)
    norm = np.sqrt((a ** 2).sum() + (b ** 2).sum())
    clipped, n = tf.clip_by_global_norm([tf.constant(a), None, tf.constant(b)], 1.5)
    assert clipped[1] is None and len(clipped) == 3
    ga, gb, gn = run([clipped[0], clipped[2], n])
    np.testing.assert_allclose(gn, norm)
    np.testing.assert_allclose(ga, a * 1.5 / max(norm, 1.5))
    np.testing.assert_allclose(gb, b * 1.5 / max(norm, 1.5))
    unclipped, _ = tf.clip_by_global_norm([tf.constant(a)], 1e6)
    np.testing.assert_allclose(run(unclipped[0]), a)


def test_clip_by_global_norm_use_norm_and_infinite_norm():
    a = np.array([3.0, 4.0])
    clipped, n = tf.clip_by_global_norm([tf.constant(a)], 1.0, use_norm=tf.constant(10.0,
                                                                                     tf.float64))
    np.testing.assert_allclose(run(clipped[0]), a / 10.0)
    inf, _ = tf.clip_by_global_norm([tf.constant([np.inf, 1.0])], 1.0)
    assert np.isnan(run(inf[0])).all()
    with pytest.raises(TypeError, match="t_list should be a sequence"):
        tf.clip_by_global_norm(tf.constant(a), 1.0)
