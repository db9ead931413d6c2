"""Sparse gradients: a gather's gradient is an IndexedSlices, kept sparse through
a variable's read and summed by concatenation; dense where it must be."""
import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)

RNG = np.random.default_rng(5)
IDS = [3, 1, 3, 0, 3]  # row 3 three times, row 2 never


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph


def _loss(rows):
    weights = tf.constant(RNG.uniform(0.5, 1.5, size=(len(IDS), 3)))
    return tf.reduce_sum(rows * rows * weights)


def _numeric(sess, loss, p, value, eps=1e-6):
    grad = np.zeros_like(value)
    for pos in np.ndindex(value.shape):
        moved = []
        for sign in (1, -1):
            v = value.copy()
            v[pos] += sign * eps
            moved.append(sess.run(loss, {p: v}))
        grad[pos] = (moved[0] - moved[1]) / (2 * eps)
    return grad


def test_gather_gradient_is_indexed_slices_equal_to_finite_differences():
    value = RNG.normal(size=(4, 3))
    p = tf.placeholder(tf.float64, [4, 3])
    loss = _loss(tf.gather(p, IDS))
    (g,) = tf.gradients(loss, [p])
    assert isinstance(g, tf.IndexedSlices) and g.dtype == tf.float64
    with tf.Session() as sess:
        got = sess.run(g, {p: value})
        assert got.indices.tolist() == IDS and got.values.shape == (5, 3)
        assert got.dense_shape.tolist() == [4, 3]
        dense = sess.run(tf.convert_to_tensor(g), {p: value})
        np.testing.assert_allclose(dense, _numeric(sess, loss, p, value), rtol=1e-6,
                                   atol=1e-6)
    assert not dense[2].any()  # a row never gathered gets nothing


def test_dense_form_equals_the_old_dense_gradient():
    """The former rule: the incoming gradient summed into rows with UnsortedSegmentSum."""
    value = RNG.normal(size=(4, 3))
    p = tf.placeholder(tf.float64, [4, 3])
    rows = tf.gather(p, IDS)
    loss = _loss(rows)
    (g,) = tf.gradients(loss, [p])
    (g_rows,) = tf.gradients(loss, [rows])
    old = tf.unsorted_segment_sum(g_rows, IDS, 4)
    with tf.Session() as sess:
        new_dense, old_dense = sess.run([tf.convert_to_tensor(g), old], {p: value})
    np.testing.assert_allclose(new_dense, old_dense)


def test_gradient_of_a_variable_through_its_read_is_sparse():
    table = tf.Variable(RNG.normal(size=(6, 2)))
    (g,) = tf.gradients(tf.reduce_sum(tf.nn.embedding_lookup(table, [[5, 0], [5, 5]])),
                        [table])
    assert isinstance(g, tf.IndexedSlices)
    assert "UnsortedSegmentSum" not in {op.type for op in tf.get_default_graph()
                                        .get_operations()}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(g)
    assert got.indices.tolist() == [5, 0, 5, 5] and got.values.tolist() == [[1, 1]] * 4


def test_two_gathers_of_one_variable_concatenate():
    table = tf.Variable(np.arange(10.0).reshape(5, 2))
    loss = tf.reduce_sum(tf.gather(table, [1, 4])) + \
        tf.reduce_sum(3.0 * tf.gather(table, np.array([4, 0], np.int64)))
    (g,) = tf.gradients(loss, [table])
    assert isinstance(g, tf.IndexedSlices) and g.indices.dtype == tf.int64
    assert g.values.op.type == "ConcatV2"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, dense = sess.run([g, tf.convert_to_tensor(g)])
    assert got.indices.tolist() == [1, 4, 4, 0]
    np.testing.assert_array_equal(dense, [[3, 3], [1, 1], [0, 0], [0, 0], [4, 4]])


def test_a_gather_and_a_dense_use_sum_to_a_dense_tensor():
    table = tf.Variable(np.arange(6.0).reshape(3, 2))
    loss = tf.reduce_sum(tf.gather(table, [2, 2])) + tf.reduce_sum(table * table)
    (g,) = tf.gradients(loss, [table])
    assert isinstance(g, tf.Tensor) and g.op.type == "AddN"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(g), 2 * np.arange(6.0).reshape(3, 2)
                                      + [[0, 0], [0, 0], [2, 2]])


def test_a_sparse_gradient_into_another_op_becomes_dense():
    value = RNG.normal(size=(3, 3))
    p = tf.placeholder(tf.float64, [3, 3])
    loss = _loss(tf.gather(tf.exp(p), [2, 0, 2, 1, 0]))
    (g,) = tf.gradients(loss, [p])
    assert isinstance(g, tf.Tensor)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(g, {p: value}), _numeric(sess, loss, p, value),
                                   rtol=1e-6, atol=1e-6)


def test_gather_on_another_axis_keeps_a_dense_gradient():
    p = tf.constant(np.ones((2, 3)))
    (g,) = tf.gradients(tf.reduce_sum(tf.gather(p, [2, 2], axis=1)), [p])
    assert isinstance(g, tf.Tensor)
    np.testing.assert_array_equal(tf.Session().run(g), [[0, 0, 2], [0, 0, 2]])


def test_gradient_tape_returns_indexed_slices():
    table = tf.Variable(np.ones((4, 2)))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.gather(table, [1, 1]))
    g = tape.gradient(loss, table)
    assert isinstance(g, tf.IndexedSlices)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(g).indices.tolist() == [1, 1]


def test_global_norm_and_clipping_take_indexed_slices():
    table = tf.Variable(np.zeros((5, 2)))
    (g,) = tf.gradients(tf.reduce_sum(3.0 * tf.gather(table, [1, 1])), [table])
    dense = tf.constant([[4.0], [0.0]], tf.float64)
    norm = tf.global_norm([g, dense])
    (clipped_g, clipped_d), norm2 = tf.clip_by_global_norm([g, dense], 2.0)
    assert isinstance(clipped_g, tf.IndexedSlices) and clipped_g.indices is g.indices
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        n, n2, cg, cd = sess.run([norm, norm2, clipped_g, clipped_d])
    # TF counts each value of the slices (3, 3, 3, 3) and the dense 4: sqrt(52).
    np.testing.assert_allclose([n, n2], [np.sqrt(52.0)] * 2)
    np.testing.assert_allclose(cg.values, np.full((2, 2), 3 * 2 / np.sqrt(52.0)))
    np.testing.assert_allclose(cd, [[4 * 2 / np.sqrt(52.0)], [0.0]])


def test_embedding_lookup_colocates_with_the_table_and_checks_its_arguments():
    table = tf.Variable(np.ones((4, 3)), name="emb")
    rows = tf.nn.embedding_lookup([table], [[0, 1]], name="look")
    assert rows.shape.as_list() == [1, 2, 3] and rows.op.type == "GatherV2"
    assert rows.op.get_attr("_class") == ["loc:@emb"]
    clipped = tf.nn.embedding_lookup(table, [0, 3], max_norm=1.0)
    np.testing.assert_allclose(np.linalg.norm(_run_init(clipped), axis=1), [1.0, 1.0])
    with pytest.raises(ValueError, match="Need at least one param"):
        tf.nn.embedding_lookup([], [0])
    with pytest.raises(ValueError, match="partition strategy"):
        tf.nn.embedding_lookup(table, [0], partition_strategy="hash")


def _run_init(t):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(t)
