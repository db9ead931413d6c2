"""Random ops: graph structure, static shapes, seeds and sample statistics."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster.ops.random import get_seed, truncated_normal

pytestmark = pytest.mark.timeout(60)

FLOATS = [tf.float16, tf.float32, tf.float64]



def build_and_run(build, seed=None, runs=1):
    """Builds `build()` in a fresh graph with graph seed `seed`; runs it `runs` times."""
    with tf.Graph().as_default():
        if seed is not None:
            tf.set_random_seed(seed)
        fetches = build()
        with tf.Session() as sess:
            return [sess.run(fetches) for _ in range(runs)]


def test_random_normal_structure_and_attrs(fresh_graph):
    out = tf.random_normal([2, 3], mean=1.0, stddev=2.0, seed=7)
    assert out.op.type == "AddV2" and out.op.name == "random_normal"
    assert out.shape.as_list() == [2, 3] and out.dtype == tf.float32
    rnd = fresh_graph.get_operation_by_name("random_normal/RandomStandardNormal")
    assert rnd.get_attr("seed") == 87654321 and rnd.get_attr("seed2") == 7
    assert rnd.get_attr("dtype") == tf.float32 and rnd.get_attr("T") == tf.int32
    assert rnd.inputs[0].op.name == "random_normal/shape"
    unseeded = tf.random_normal([2]).op.inputs[0].op.inputs[0].op
    assert (unseeded.get_attr("seed"), unseeded.get_attr("seed2")) == (0, 0)


def test_random_uniform_structure(fresh_graph):
    f = tf.random_uniform([4], minval=-1.0, maxval=3.0)
    assert f.op.type == "AddV2" and f.op.name == "random_uniform"
    assert fresh_graph.get_operation_by_name("random_uniform/RandomUniform").get_attr(
        "dtype") == tf.float32
    i = tf.random_uniform([4, 5], minval=2, maxval=9, dtype=tf.int64, name="ints")
    assert i.op.type == "RandomUniformInt" and i.op.name == "ints"
    assert i.op.get_attr("Tout") == tf.int64 and i.shape.as_list() == [4, 5]
    assert [t.op.name for t in i.op.inputs] == ["ints/shape", "ints/min", "ints/max"]


def test_static_shapes_partial():
    n = tf.placeholder(tf.int32, [])
    assert tf.random_normal([n, 3]).shape.as_list() == [None, 3]
    assert tf.random_uniform(tf.placeholder(tf.int32, [2])).shape.as_list() == [None, None]
    x = tf.placeholder(tf.float32, [None, 5])
    assert tf.random_uniform(tf.shape(x)).shape.as_list() == [None, 5]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [[], [3], [2, 3, 4]])
def test_values_dtypes_and_ranges(dtype, shape):
    def build():
        return [tf.random_normal(shape, dtype=dtype), tf.random_uniform(shape, 2, 5, dtype),
                truncated_normal(shape, dtype=dtype)]
    normal, uniform, truncated = build_and_run(build, seed=4)[0]
    for out in (normal, uniform, truncated):
        assert out.dtype == dtype.as_numpy_dtype and out.shape == tuple(shape)
    # In half precision, rnd * 3 + 2 may round up to 5 (as in TF).
    assert np.all((uniform >= 2) & (uniform <= 5 if dtype == tf.float16 else uniform < 5))
    assert np.all(np.abs(truncated) <= 2)


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_uniform_int_values(dtype):
    (out,) = build_and_run(lambda: tf.random_uniform([1000], -3, 4, dtype=dtype))
    assert out.dtype == dtype.as_numpy_dtype
    assert out.min() >= -3 and out.max() < 4 and set(np.unique(out)) == set(range(-3, 4))


def test_statistics():
    def build():
        return [tf.random_normal([20000], mean=3.0, stddev=0.5, dtype=tf.float64),
                tf.random_uniform([20000], -1.0, 1.0),
                truncated_normal([20000], stddev=2.0)]
    normal, uniform, truncated = build_and_run(build, seed=1)[0]
    assert abs(normal.mean() - 3.0) < 0.02 and abs(normal.std() - 0.5) < 0.02
    assert abs(uniform.mean()) < 0.03 and uniform.min() >= -1 and uniform.max() < 1
    assert np.abs(truncated).max() <= 4.0 and abs(truncated.std() - 2 * 0.88) < 0.05


def test_half_precision_uniform_stays_below_one():
    (out,) = build_and_run(lambda: tf.random_uniform([200000], dtype=tf.float16), seed=3)
    assert out.max() < 1.0 and out.min() >= 0.0


def random_graph():
    return [tf.random_normal([3, 2]), tf.random_uniform([4]),
            tf.random_uniform([5], 0, 100, dtype=tf.int32), truncated_normal([6])]


def test_graph_seed_reproducible_across_fresh_graphs_and_sessions():
    first = build_and_run(random_graph, seed=42, runs=2)
    second = build_and_run(random_graph, seed=42, runs=2)
    for a, b in zip(first, second):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    for x, y in zip(first[0], first[1]):  # consecutive runs draw new values
        assert not np.array_equal(x, y)
    other = build_and_run(random_graph, seed=43)[0]
    assert not np.array_equal(first[0][0], other[0])


def test_op_seed_reproducible_without_graph_seed():
    def build():
        return tf.random_normal([5], seed=11)
    assert np.array_equal(build_and_run(build)[0], build_and_run(build)[0])
    (one,) = build_and_run(lambda: tf.random_normal([5], seed=12))
    assert not np.array_equal(build_and_run(build)[0], one)


def test_unseeded_differs_between_sessions():
    a = build_and_run(lambda: tf.random_normal([8]))[0]
    b = build_and_run(lambda: tf.random_normal([8]))[0]
    assert not np.array_equal(a, b)


def test_same_seed_ops_in_one_graph_match():
    a, b = build_and_run(lambda: [tf.random_uniform([4], seed=5),
                                  tf.random_uniform([4], seed=5)])[0]
    np.testing.assert_array_equal(a, b)


def test_get_seed_rule(fresh_graph):
    assert get_seed(None) == (None, None)
    assert get_seed(5) == (87654321, 5)
    tf.set_random_seed(0)
    assert get_seed(0) == (0, 2 ** 31 - 1)
    tf.set_random_seed(3)
    assert get_seed(None) == (3, fresh_graph.version)
    assert fresh_graph.seed == 3


def test_mean_and_stddev_tensors():
    def build():
        mean = tf.placeholder_with_default(np.float32(10.0), [])
        return tf.random_normal([1000], mean=mean, stddev=tf.constant(0.1))
    (out,) = build_and_run(build, seed=2)
    assert abs(out.mean() - 10.0) < 0.05


def test_errors():
    with pytest.raises(ValueError, match="Invalid dtype tf.bool"):
        tf.random_uniform([2], dtype=tf.bool)
    with pytest.raises(ValueError, match="Must specify maxval for integer dtype"):
        tf.random_uniform([2], dtype=tf.int32)
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        tf.random_normal([2], dtype=tf.int32)
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
        tf.random_normal([[2, 3]])
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        tf.random_uniform([2], [0, 1], 5, dtype=tf.int32)
    lo = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Need minval < maxval, got 5 >= 5"):
        with tf.Session() as sess:
            sess.run(tf.random_uniform([2], lo, 5, dtype=tf.int32), {lo: 5})
    dims = tf.placeholder(tf.int32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="must be >= 0"):
        with tf.Session() as sess:
            sess.run(tf.random_normal(dims), {dims: [2, -1]})


# -- tf.random.* and RandomShuffle ----------------------------------------------------------
def test_tf_random_namespace_is_tf1s():
    assert tf.random.uniform is tf.random_uniform and tf.random.normal is tf.random_normal
    assert tf.random.truncated_normal is tf.truncated_normal
    assert tf.random.set_random_seed is tf.set_random_seed
    assert tf.random.shuffle is tf.random_shuffle


def test_random_shuffle_is_a_permutation_of_rows(fresh_graph):
    x = np.arange(20, dtype=np.int64).reshape(10, 2)
    out = tf.random.shuffle(tf.constant(x), seed=3, name="mix")
    assert (out.op.type, out.op.name, out.shape.as_list()) == ("RandomShuffle", "mix", [10, 2])
    assert out.op.get_attr("T") == tf.int64 and out.op.get_attr("seed2") == 3
    with tf.Session() as sess:
        first, second = sess.run(out), sess.run(out)
    for rows in (first, second):  # whole rows move, each exactly once
        assert sorted(rows[:, 0].tolist()) == x[:, 0].tolist()
        np.testing.assert_array_equal(rows[:, 1], rows[:, 0] + 1)
    assert not np.array_equal(first, second)  # each run draws the next order
    scalar = tf.random.shuffle(tf.constant(5.0))
    words = tf.random.shuffle(tf.constant(["a", "b", "c"]))
    with tf.Session() as sess:
        assert sess.run(scalar) == 5.0
        assert sorted(sess.run(words).tolist()) == [b"a", b"b", b"c"]


def test_seeded_graph_repeats_its_sequence_in_every_session():
    def build():
        return [tf.random.uniform([3]), tf.random.normal([2], seed=5),
                tf.random.shuffle(tf.range(8))]
    with tf.Graph().as_default():
        tf.random.set_random_seed(11)
        fetches = build()
        with tf.Session() as sess:
            once = [sess.run(fetches) for _ in range(2)]
        with tf.Session() as sess:
            again = [sess.run(fetches) for _ in range(2)]
    for a, b in zip(once, again):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    rebuilt = build_and_run(build, seed=11, runs=2)  # same graph built again: same values
    for a, b in zip(once, rebuilt):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    other = build_and_run(build, seed=12)[0]
    assert not np.array_equal(other[0], once[0][0])
    unseeded = build_and_run(lambda: tf.random.shuffle(tf.range(50)), runs=1)[0]
    assert not np.array_equal(unseeded, build_and_run(lambda: tf.random.shuffle(tf.range(50)))[0])
