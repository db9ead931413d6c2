"""Gradient rules of the indexing, selection, tiling/splitting, clipping and sparse
cross-entropy ops against central finite differences in float64.

Same method and three shape modes as test_gradient_rules.py (whose helpers it
reuses): static shapes, every dimension None, unknown rank.
"""
import numpy as np
import pytest
from test_gradient_rules import MODES, check_gradient, u

import nbcluster as tf

pytestmark = pytest.mark.timeout(120)

RNG = np.random.default_rng(11)
MASK = np.array([[True, False, True], [False, True, True]])


def sparse_xent(labels):
    return lambda logits: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=np.array(labels), logits=logits)


def sparse_xent_second_order(x):
    w = tf.constant(RNG.uniform(0.5, 1.5, size=2))
    loss = tf.reduce_sum(sparse_xent([0, 2])(x) * w)
    return tf.gradients(loss, x)[0]


def away_from(*shape, points=(-1.0, 1.0)):
    """Uniform in [-2, 2] but at least 0.1 from each clipping point."""
    x = RNG.uniform(-2, 2, size=shape)
    for p in points:
        near = np.abs(x - p) < 0.1
        x[near] = p + 0.2 * np.sign(x[near] - p + 1e-9)
    return x


CASES = {
    "GatherV2": (lambda p: tf.gather(p, [2, 0, 2]), [u(3, 4)]),
    "GatherV2-axis1-matrix-indices": (lambda p: tf.gather(p, [[1, 0], [2, 2]], axis=1),
                                      [u(2, 3, 2)]),
    "GatherV2-last-axis": (lambda p: tf.gather(p, np.array([1, 1], np.int64), axis=2),
                           [u(2, 2, 3)]),
    "UnsortedSegmentSum": (lambda d: tf.unsorted_segment_sum(d, [0, 2, 0, -1], 3), [u(4, 2)]),
    # x / y kept away from integers, where FloorMod jumps
    "FloorMod": (lambda x, y: tf.floormod(x, y),
                 [np.array([[2.3, -2.6, 5.4]]), np.array([[1.5], [-2.5]])]),
    "UnsortedSegmentSum-matrix-ids": (
        lambda d: tf.unsorted_segment_sum(d, [[1, 0], [1, 1]], 2), [u(2, 2, 3)]),
    "Tile": (lambda x: tf.tile(x, [2, 3]), [u(2, 3)]),
    "Tile-ones": (lambda x: tf.tile(x, [1, 2, 1]), [u(2, 1, 3)]),
    "Split": (lambda x: tf.split(x, 3, axis=1)[1] * 2.0 + tf.split(x, 3, axis=1)[2],
              [u(2, 6)]),
    "Split-one-output-used": (lambda x: tf.split(x, 2)[0], [u(4, 3)]),
    "SplitV": (lambda x: tf.split(x, [1, -1], axis=0)[1], [u(3, 2)]),
    "SplitV-all-used": (lambda x: tf.concat(tf.split(x, [2, 1, 1], axis=1)[::-1], 1),
                        [u(2, 4)]),
    "Select": (lambda x, y: tf.where(MASK, x, y), [u(2, 3), u(2, 3)]),
    "Select-vector-condition": (lambda x, y: tf.where([False, True], x, y),
                                [u(2, 3), u(2, 3)]),
    "boolean_mask": (lambda x: tf.boolean_mask(x, MASK), [u(2, 3)]),
    "boolean_mask-axis1": (lambda x: tf.boolean_mask(x, [True, False, True], axis=1),
                           [u(2, 3, 2)]),
    "SparseSoftmaxCrossEntropyWithLogits": (sparse_xent([0, 2]), [u(2, 3)]),
    "SparseSoftmaxCrossEntropyWithLogits-rank3": (sparse_xent([[1, 0], [2, 2]]),
                                                  [u(2, 2, 3)]),
    "SparseSoftmaxCrossEntropyWithLogits-second-order": (sparse_xent_second_order,
                                                         [u(2, 3)]),
    "clip_by_value": (lambda x: tf.clip_by_value(x, -1.0, 1.0), [away_from(3, 4)]),
    "clip_by_norm": (lambda x: tf.clip_by_norm(x, 1.0), [u(2, 3)]),
    "clip_by_norm-axes": (lambda x: tf.clip_by_norm(x, 1.5, axes=[1]), [u(3, 2)]),
    "global_norm": (lambda x, y: tf.global_norm([x, y]), [u(2, 3), u(4)]),
    "clip_by_global_norm": (lambda x, y: tf.add_n(
        [tf.reduce_sum(t) for t in tf.clip_by_global_norm([x, y], 1.0)[0]]),
        [u(2, 3), u(4)]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_matches_finite_differences(case, mode):
    fn, values = CASES[case]
    check_gradient(case, fn, values, mode, 1e-6, 1e-6)


def test_gather_gradient_is_sparse_and_indices_get_none():
    p = tf.placeholder(tf.float64, [4, 2])
    i = tf.placeholder(tf.int32, [None])
    gp, gi = tf.gradients(tf.reduce_sum(tf.gather(p, i)), [p, i])
    assert gi is None and isinstance(gp, tf.IndexedSlices)
    assert gp.shape.as_list() == [4, 2]
    dense = tf.convert_to_tensor(gp)
    assert dense.op.type == "UnsortedSegmentSum"
    got = tf.Session().run(dense, {p: np.zeros((4, 2)), i: [3, 3, 0]})
    np.testing.assert_array_equal(got, [[1, 1], [0, 0], [0, 0], [2, 2]])


def test_gather_gradient_negative_axis_with_known_rank():
    p = tf.constant(u(2, 3))
    (g,) = tf.gradients(tf.reduce_sum(tf.gather(p, [0, 0, 2], axis=-1)), [p])
    np.testing.assert_array_equal(tf.Session().run(g), [[2, 0, 1], [2, 0, 1]])


def test_gather_gradient_needs_a_constant_axis():
    p = tf.placeholder(tf.float64, [2, 3])
    a = tf.placeholder(tf.int32, [])
    with pytest.raises(NotImplementedError, match="needs a constant axis"):
        tf.gradients(tf.reduce_sum(tf.gather(p, [0], axis=a)), [p])


@pytest.mark.parametrize("op_type", ["OneHot", "Where", "All", "Any", "LogicalAnd",
                                     "IsNan", "ScatterAdd"])
def test_no_gradient_ops_are_declared(op_type):
    from nbcluster.grad import gradient_table
    assert gradient_table.is_declared(op_type) and gradient_table.get_gradient_rule(op_type) is None
