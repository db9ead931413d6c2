"""Initializers: exact values for the constant ones, bounds and spread for the random
ones (fans as TF computes them), seeds, and errors naming the bad argument."""
import math

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.ops.init_ops import fans

pytestmark = pytest.mark.timeout(60)


def _value(initializer, shape, dtype=tf.float32):
    with tf.Session() as sess:
        return sess.run(initializer(shape, dtype=dtype))


def test_constant_initializers_give_exact_values():
    np.testing.assert_array_equal(_value(tf.zeros_initializer(), [2, 3]), np.zeros((2, 3)))
    assert _value(tf.ones_initializer(), [2], tf.int32).tolist() == [1, 1]
    np.testing.assert_array_equal(_value(tf.constant_initializer(0.5), [2, 2]),
                                  np.full((2, 2), 0.5, np.float32))
    got = _value(tf.constant_initializer([1, 2, 3, 4, 5, 6]), [2, 3])
    assert got.tolist() == [[1, 2, 3], [4, 5, 6]] and got.dtype == np.float32
    with pytest.raises(ValueError, match=r"has 3 elements; the variable's shape \[2, 2\]"):
        tf.constant_initializer([1, 2, 3])([2, 2])
    with pytest.raises(TypeError, match="Expected Tensor's shape"):
        tf.constant_initializer([1, 2, 3, 4], verify_shape=True)([4, 1])
    with pytest.raises(ValueError, match="fully defined shape"):
        tf.zeros_initializer()([None, 2])


def test_fans_follow_tf():
    assert fans([]) == (1, 1) and fans([7]) == (7, 7) and fans([784, 256]) == (784, 256)
    assert fans([3, 3, 16, 32]) == (9 * 16, 9 * 32)  # a conv kernel: the window multiplies


def test_glorot_uniform_stays_within_its_limit_and_fills_it():
    values = _value(tf.glorot_uniform_initializer(seed=1), [300, 200])
    limit = math.sqrt(6.0 / (300 + 200))
    assert np.abs(values).max() <= limit
    assert np.abs(values).max() > 0.99 * limit and abs(values.mean()) < 0.01
    np.testing.assert_allclose(values.std(), limit / math.sqrt(3), rtol=0.02)


@pytest.mark.parametrize("mode, n", [("fan_in", 400), ("fan_out", 100), ("fan_avg", 250)])
def test_variance_scaling_normal_has_the_variance_of_its_fan(mode, n):
    values = _value(tf.variance_scaling_initializer(2.0, mode, "truncated_normal", seed=3),
                    [400, 100])
    np.testing.assert_allclose(values.var(), 2.0 / n, rtol=0.05)
    # truncated at two stddevs of the untruncated distribution
    assert np.abs(values).max() <= 2 * math.sqrt(2.0 / n) / 0.87962566103423978 + 1e-6


def test_random_initializers_respect_their_parameters_and_seeds():
    uniform = _value(tf.random_uniform_initializer(-3.0, -1.0, seed=5), [1000])
    assert uniform.min() >= -3.0 and uniform.max() < -1.0
    normal = _value(tf.random_normal_initializer(10.0, 0.5, seed=5), [20000])
    assert abs(normal.mean() - 10.0) < 0.02 and abs(normal.std() - 0.5) < 0.02
    truncated = _value(tf.truncated_normal_initializer(0.0, 1.0, seed=5), [20000])
    assert np.abs(truncated).max() <= 2.0
    with tf.Graph().as_default():
        tf.set_random_seed(7)
        first = _value(tf.random_normal_initializer(seed=9), [5])
    with tf.Graph().as_default():
        tf.set_random_seed(7)
        again = _value(tf.random_normal_initializer(seed=9), [5])
    np.testing.assert_array_equal(first, again)


def test_an_initializer_class_works_where_an_instance_is_meant():
    v = tf.get_variable("v", [2], initializer=tf.ones_initializer)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(v).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("kwargs, words", [
    ({"scale": 0.0}, "`scale` must be a positive float, not 0.0"),
    ({"mode": "fan_sum"}, "Invalid `mode` argument 'fan_sum'"),
    ({"distribution": "cauchy"}, "Invalid `distribution` argument 'cauchy'"),
])
def test_bad_variance_scaling_arguments_are_named(kwargs, words):
    with pytest.raises(ValueError, match=words.replace("`", "`").replace("(", r"\(")):
        tf.variance_scaling_initializer(**kwargs)


def test_tf_initializers_namespace_holds_tf1s_aliases():
    init = tf.initializers
    assert init.zeros is tf.zeros_initializer and init.ones is tf.ones_initializer
    assert init.constant is tf.constant_initializer
    assert init.random_uniform is tf.random_uniform_initializer
    assert init.random_normal is tf.random_normal_initializer
    assert init.truncated_normal is tf.truncated_normal_initializer
    assert init.glorot_uniform is tf.glorot_uniform_initializer
    assert init.glorot_normal is tf.glorot_normal_initializer
    assert init.variance_scaling is tf.variance_scaling_initializer
    assert init.global_variables is tf.global_variables_initializer
    assert init.local_variables is tf.local_variables_initializer
    assert init.variables is tf.variables_initializer
    np.testing.assert_array_equal(_value(init.constant(2.5), [2]), [2.5, 2.5])


@pytest.mark.parametrize("name, scale, kind", [
    ("he_normal", 2.0, "truncated_normal"), ("he_uniform", 2.0, "uniform"),
    ("lecun_normal", 1.0, "truncated_normal"), ("lecun_uniform", 1.0, "uniform")])
def test_he_and_lecun_are_variance_scaling_on_fan_in(name, scale, kind):
    made = getattr(tf.initializers, name)(seed=3)
    assert made.get_config() == {"scale": scale, "mode": "fan_in", "distribution": kind,
                                 "seed": 3, "dtype": "float32"}
    values = _value(made, [500, 200])
    assert abs(values.var() / (scale / 500) - 1) < 0.1
