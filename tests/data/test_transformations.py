"""tf.data's transformations against values computed with NumPy and plain Python."""
import numpy as np
import pytest
from data_checks import elements

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)

Dataset = tf.data.Dataset


def ints(ds) -> list:
    return [np.asarray(v).tolist() for v in elements(ds)]


def test_map_over_a_tuple_element_calls_with_positional_args():
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    ds = Dataset.from_tensor_slices((x, np.arange(5))).map(
        lambda a, i: {"sum": tf.reduce_sum(a) * tf.cast(i, tf.float32), "i": i})
    assert ds._variant.op.type == "MapDataset"
    assert ds.output_types == {"sum": tf.float32, "i": tf.int64}
    got = elements(ds)
    np.testing.assert_allclose([g["sum"] for g in got], x.sum(axis=1) * np.arange(5),
                               rtol=1e-5)


@pytest.mark.parametrize("calls", [2, tf.data.AUTOTUNE, tf.data.experimental.AUTOTUNE])
def test_parallel_map_keeps_input_order(calls):
    ds = Dataset.range(40).map(lambda v: v * v + 1, num_parallel_calls=calls)
    assert ds._variant.op.type == "ParallelMapDatasetV2"
    assert ints(ds) == [v * v + 1 for v in range(40)]


def test_map_captures_a_tensor_of_the_enclosing_graph():
    scale = tf.constant(3, tf.int64)
    offset = tf.placeholder(tf.int64, [])
    ds = Dataset.range(4).map(lambda v: v * scale + offset)
    op = ds._variant.op
    assert [t.op.type for t in op.inputs[1:]] == ["Const", "Placeholder"]
    assert op.get_attr("Targuments") == [tf.int64, tf.int64]
    it = ds.make_initializable_iterator()
    x = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {offset: 100})
        assert [int(sess.run(x)) for _ in range(4)] == [100, 103, 106, 109]


def test_map_returning_an_unsupported_structure_is_a_type_error():
    # TF's classes: a TypeError for an object, a ValueError for None.
    with pytest.raises(TypeError, match=r"Unsupported return value .* Dataset.map\(\)"):
        Dataset.range(3).map(lambda v: (v, object()))
    with pytest.raises(ValueError, match="map_func` returned None"):
        Dataset.range(3).map(lambda v: None)


def test_filter_keeps_what_the_predicate_accepts():
    ds = Dataset.range(20).filter(lambda v: tf.equal(v % 3, 0))
    assert ds._variant.op.type == "FilterDataset"
    assert ints(ds) == [v for v in range(20) if v % 3 == 0]
    with pytest.raises(ValueError, match="predicate"):
        Dataset.range(3).filter(lambda v: v)


@pytest.mark.parametrize("drop", [False, True])
def test_batch_with_and_without_the_remainder(drop):
    x = np.arange(14, dtype=np.float32).reshape(7, 2)
    ds = Dataset.from_tensor_slices(x).batch(3, drop_remainder=drop)
    assert ds._variant.op.type == "BatchDatasetV2"
    assert ds.output_shapes.as_list() == ([3, 2] if drop else [None, 2])
    got = elements(ds)
    want = [x[0:3], x[3:6]] + ([] if drop else [x[6:7]])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_padded_batch_pads_each_component_to_the_longest():
    rows = [np.arange(n, dtype=np.int32) for n in (1, 3, 2, 4)]
    ds = Dataset.from_generator(lambda: ((r, np.float32(len(r))) for r in rows),
                                (tf.int32, tf.float32), ([None], [])).padded_batch(
        2, padding_values=(-1, 0.0))
    assert ds._variant.op.type == "PaddedBatchDatasetV2"
    got = elements(ds)
    assert got[0][0].tolist() == [[0, -1, -1], [0, 1, 2]]
    assert got[1][0].tolist() == [[0, 1, -1, -1], [0, 1, 2, 3]]
    assert [g[1].tolist() for g in got] == [[1.0, 3.0], [2.0, 4.0]]
    fixed = Dataset.from_tensor_slices(np.ones((3, 2), np.int64)).padded_batch(
        3, padded_shapes=[4])
    assert fixed.output_shapes.as_list() == [None, 4]
    np.testing.assert_array_equal(elements(fixed)[0], np.pad(np.ones((3, 2)), ((0, 0), (0, 2))))


def test_shuffle_is_a_permutation_and_seeded_runs_repeat():
    def order(seed):
        with tf.Graph().as_default():
            return ints(Dataset.range(50).shuffle(10, seed=seed))

    first = order(7)
    assert sorted(first) == list(range(50)) and first != list(range(50))
    assert order(7) == first and order(8) != first
    # A shuffle buffer of 10 moves no element earlier than 9 places ahead of its turn.
    assert all(pos >= v - 9 for pos, v in enumerate(first))


def test_shuffle_reshuffles_each_epoch_unless_told_not_to():
    epochs = ints(Dataset.range(20).shuffle(20, seed=3).repeat(2))
    assert sorted(epochs[:20]) == sorted(epochs[20:]) == list(range(20))
    assert epochs[:20] != epochs[20:]
    same = ints(Dataset.range(20).shuffle(20, seed=3, reshuffle_each_iteration=False)
                .repeat(2))
    assert same[:20] == same[20:]
    op = Dataset.range(3).shuffle(2, seed=1)._variant.op
    assert op.type == "ShuffleDatasetV3" and op.inputs[4].op.type == "DummySeedGenerator"


def test_the_graph_seed_makes_shuffle_deterministic():
    def order():
        with tf.Graph().as_default():
            tf.set_random_seed(11)
            return ints(Dataset.range(30).shuffle(30))
    assert order() == order()


def test_repeat_take_skip():
    assert ints(Dataset.range(3).repeat(3)) == [0, 1, 2] * 3
    assert ints(Dataset.range(3).repeat().take(8)) == [0, 1, 2, 0, 1, 2, 0, 1]
    assert ints(Dataset.range(10).skip(7)) == [7, 8, 9]
    assert ints(Dataset.range(10).skip(-1)) == []
    assert ints(Dataset.range(10).take(-1)) == list(range(10))
    assert ints(Dataset.range(0).repeat()) == []  # an empty repeat ends, as in TF
    for ds, op_type in ((Dataset.range(1).repeat(), "RepeatDataset"),
                        (Dataset.range(1).take(1), "TakeDataset"),
                        (Dataset.range(1).skip(1), "SkipDataset")):
        assert ds._variant.op.type == op_type


def test_shard_takes_every_nth_element():
    ds = Dataset.range(10).shard(3, 1)
    assert ds._variant.op.type == "ShardDataset"
    assert ints(ds) == list(range(10))[1::3]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Index must be between"):
        ints(Dataset.range(3).shard(2, 2))


def test_cache_replays_the_first_pass():
    calls = []

    def gen():
        calls.append(1)
        yield from range(4)

    ds = Dataset.from_generator(gen, tf.int64).cache().repeat(3)
    assert ds._variant.op.inputs[0].op.type == "CacheDataset"
    assert ints(ds) == [0, 1, 2, 3] * 3
    assert len(calls) == 1  # the generator ran once: later passes came from the cache
    with pytest.raises(tf.errors.UnimplementedError, match="not supported"):
        ints(Dataset.range(2).cache("/tmp/some-cache"))


def test_unbatch_and_enumerate():
    x = np.arange(12).reshape(2, 3, 2)
    ds = Dataset.from_tensors(x).unbatch().unbatch()
    assert ds._variant.op.type == "UnbatchDataset" and ds.output_shapes.as_list() == [2]
    assert ints(ds) == x.reshape(6, 2).tolist()
    with pytest.raises(ValueError, match="scalar"):
        Dataset.range(3).unbatch()
    pairs = elements(Dataset.from_tensor_slices(np.array([5.0, 6.0], np.float32)).enumerate(3))
    assert [(int(i), float(v)) for i, v in pairs] == [(3, 5.0), (4, 6.0)]


def test_prefetch_gives_the_same_elements():
    ds = Dataset.range(25).map(lambda v: v * 2).prefetch(4)
    assert ds._variant.op.type == "PrefetchDataset"
    assert ints(ds) == [2 * v for v in range(25)]
    assert ints(Dataset.range(5).prefetch(tf.data.AUTOTUNE)) == list(range(5))


def test_prefetch_hands_on_an_error_of_its_input():
    ok = Dataset.from_generator(_fails_after_two, tf.int64).prefetch(2)
    x = tf.compat.v1.data.make_one_shot_iterator(ok).get_next()
    with tf.Session() as sess:
        assert [int(sess.run(x)) for _ in range(2)] == [0, 1]
        with pytest.raises(tf.errors.InvalidArgumentError, match="boom"):
            sess.run(x)


def _fails_after_two():
    yield 0
    yield 1
    raise ValueError("boom")


def test_zip_stops_at_the_shortest():
    a, b = Dataset.range(5), Dataset.range(10, 13).map(lambda v: tf.cast(v, tf.float32))
    ds = Dataset.zip((a, {"b": b}))
    assert ds._variant.op.type == "ZipDataset"
    assert ds.output_types == (tf.int64, {"b": tf.float32})
    got = elements(ds)
    assert [(int(x), float(y["b"])) for x, y in got] == [(0, 10.0), (1, 11.0), (2, 12.0)]


def test_concatenate_and_its_type_check():
    ds = Dataset.range(3).concatenate(Dataset.range(10, 12))
    assert ds._variant.op.type == "ConcatenateDataset"
    assert ints(ds) == [0, 1, 2, 10, 11]
    with pytest.raises(TypeError, match="Incompatible"):
        Dataset.range(3).concatenate(Dataset.from_tensor_slices(np.zeros(2, np.float32)))


def _reference_interleave(inputs, make, cycle, block):
    """TF's documented interleave order, written out in plain Python."""
    inputs, slots, out, ended = iter(inputs), [None] * cycle, [], False
    index = taken = opened = 0
    while not ended or opened:
        if slots[index] is not None:
            value = next(slots[index], None)
            if value is not None:
                out.append(value)
                taken += 1
                if taken < block:
                    continue
            else:
                slots[index], opened = None, opened - 1
        elif not ended:
            item = next(inputs, None)
            if item is None:
                ended = True
            else:
                slots[index], opened = iter(make(item)), opened + 1
            continue
        index, taken = (index + 1) % cycle, 0
    return out


@pytest.mark.parametrize("cycle,block", [(2, 1), (3, 2), (1, 3), (4, 1)])
def test_interleave_order_matches_tf(cycle, block):
    ds = Dataset.range(1, 6).interleave(
        lambda v: Dataset.from_tensors(v).repeat(v), cycle_length=cycle, block_length=block)
    assert ds._variant.op.type == "InterleaveDataset"
    want = _reference_interleave(range(1, 6), lambda v: [v] * v, cycle, block)
    assert ints(ds) == want


def test_interleave_gives_tf_documented_example():
    ds = Dataset.range(1, 6).interleave(lambda v: Dataset.from_tensors(v).repeat(6),
                                        cycle_length=2, block_length=4)
    assert ints(ds) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3,
                        4, 4, 5, 5, 5, 5, 5, 5]


def test_interleave_needs_a_dataset():
    with pytest.raises(TypeError, match="tf.data.Dataset"):
        Dataset.range(3).interleave(lambda v: v, cycle_length=1)


def test_flat_map_chains_inner_datasets():
    ds = Dataset.range(4).flat_map(lambda v: Dataset.range(v))
    assert ints(ds) == [0, 0, 1, 0, 1, 2]


def test_a_pipeline_of_many_steps_matches_numpy():
    x = np.random.default_rng(1).normal(size=(37, 4)).astype(np.float32)
    w = np.random.default_rng(2).normal(size=(4,)).astype(np.float32)
    weights = tf.constant(w)
    ds = (Dataset.from_tensor_slices(x)
          .map(lambda r: tf.reduce_sum(r * weights), num_parallel_calls=3)
          .filter(lambda s: s > 0.0)
          .batch(5)
          .prefetch(1))
    got = np.concatenate(elements(ds))
    want = (x * w).sum(axis=1)
    np.testing.assert_allclose(got, want[want > 0], rtol=1e-5)
