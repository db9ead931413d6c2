"""tf.data iterators: one-shot, initializable (re-initialised with new feeds), from_structure;
their errors; and dataset graphs through as_graph_def()/import_graph_def()."""
import numpy as np
import pytest
from tensorflow_processes import requires_tensorflow

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)

Dataset = tf.data.Dataset


def read_all(sess, x) -> list:
    out = []
    while True:
        try:
            out.append(sess.run(x))
        except tf.errors.OutOfRangeError:
            return out


def test_one_shot_iterator_ops_and_its_end():
    ds = Dataset.range(3)
    it = ds.make_one_shot_iterator()
    x = it.get_next()
    assert it._resource.op.type == "OneShotIterator" and it._resource.dtype == tf.resource
    assert x.op.type == "IteratorGetNext" and x.dtype == tf.int64 and x.shape.as_list() == []
    factory = it._resource.op.get_attr("dataset_factory")
    assert [n.op for n in factory.nodes][-1] == "RangeDataset"
    with tf.Session() as sess:
        assert [int(v) for v in read_all(sess, x)] == [0, 1, 2]
        with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
            sess.run(x)  # stays at its end
    with pytest.raises(ValueError, match="does not have an initializer"):
        it.initializer  # noqa: B018 - the property raises


def test_compat_v1_make_one_shot_iterator_is_the_same():
    x = tf.compat.v1.data.make_one_shot_iterator(Dataset.range(2)).get_next()
    with tf.Session() as sess:
        assert [int(v) for v in read_all(sess, x)] == [0, 1]


def test_one_shot_iterator_refuses_a_placeholder_as_tf_does():
    n = tf.placeholder(tf.int64, [])
    with pytest.raises(ValueError, match="Cannot capture a placeholder"):
        tf.compat.v1.data.make_one_shot_iterator(Dataset.range(n))


def test_initializable_iterator_restarts_with_new_feeds():
    data = tf.placeholder(tf.float32, [None, 2])
    scale = tf.placeholder(tf.float32, [])
    ds = Dataset.from_tensor_slices(data).map(lambda r: r * scale).batch(2)
    it = tf.compat.v1.data.make_initializable_iterator(ds)
    assert it.initializer.type == "MakeIterator" and it._resource.op.type == "IteratorV2"
    x = it.get_next()
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    b = -np.arange(4, dtype=np.float32).reshape(2, 2)
    with tf.Session() as sess:
        sess.run(it.initializer, {data: a, scale: 2.0})
        first = sess.run(x)
        np.testing.assert_array_equal(first, a[:2] * 2)
        sess.run(it.initializer, {data: b, scale: 10.0})  # starts over on the new values
        got = read_all(sess, x)
        assert len(got) == 1
        np.testing.assert_array_equal(got[0], b * 10)
        sess.run(it.initializer, {data: a, scale: 1.0})
        np.testing.assert_array_equal(np.concatenate(read_all(sess, x)), a)


def test_get_next_before_the_initializer_is_failed_precondition():
    it = Dataset.range(2).make_initializable_iterator()
    x = it.get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.FailedPreconditionError,
                                             match="not been initialized"):
        sess.run(x)


def test_from_structure_switches_between_datasets():
    train = Dataset.range(5).map(lambda v: tf.cast(v, tf.float32))
    test = Dataset.from_tensor_slices(np.array([10.0, 20.0], np.float32))
    it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    x = it.get_next()
    train_init, test_init = it.make_initializer(train), it.make_initializer(test)
    with tf.Session() as sess:
        sess.run(train_init)
        assert float(sess.run(x)) == 0.0 and float(sess.run(x)) == 1.0
        sess.run(test_init)
        assert [float(v) for v in read_all(sess, x)] == [10.0, 20.0]
        sess.run(train_init)
        assert len(read_all(sess, x)) == 5


def test_make_initializer_of_an_incompatible_dataset_raises_at_build_time():
    it = tf.data.Iterator.from_structure(tf.int64, [])
    with pytest.raises(TypeError, match="Expected output types tf.int64 but got dataset "
                                        "with output types tf.float32"):
        it.make_initializer(Dataset.from_tensors(1.0))
    with pytest.raises(TypeError, match="Expected output shapes compatible with"):
        it.make_initializer(Dataset.from_tensors(np.array([1, 2], np.int64)))
    with pytest.raises(ValueError, match="same nested structure"):
        it.make_initializer(Dataset.from_tensors((np.int64(1), np.int64(2))))


def test_a_dict_structure_comes_back_from_get_next():
    ds = Dataset.from_tensor_slices({"a": np.arange(3), "b": np.ones((3, 2), np.float32)})
    nxt = ds.make_one_shot_iterator().get_next()
    assert set(nxt) == {"a", "b"} and nxt["b"].shape.as_list() == [2]
    with tf.Session() as sess:
        got = sess.run(nxt)
    assert int(got["a"]) == 0 and got["b"].tolist() == [1.0, 1.0]


def test_a_shared_name_iterator_is_one_resource_on_its_server():
    server = tf.train.Server.create_local_server()
    try:
        with tf.Graph().as_default():
            it = Dataset.range(4).make_initializable_iterator(shared_name="shared_it")
            x = it.get_next()
            with tf.Session(server.target) as sess:
                sess.run(it.initializer)
                assert int(sess.run(x)) == 0
        with tf.Graph().as_default():
            it = Dataset.range(4).make_initializable_iterator(shared_name="shared_it")
            x = it.get_next()
            with tf.Session(server.target) as sess:  # another session, the same iterator
                assert int(sess.run(x)) == 1
    finally:
        server.stop()


def _graph_def_round_trip(build):
    with tf.Graph().as_default() as g1:
        x1 = build()
        with tf.Session() as sess:
            want = read_all(sess, x1)
    graph_def = g1.as_graph_def()
    with tf.Graph().as_default() as g2:
        tf.import_graph_def(graph_def, name="copy")
        x2 = g2.get_tensor_by_name("copy/" + x1.name)
        with tf.Session() as sess:
            got = read_all(sess, x2)
    return want, got, graph_def


def test_dataset_graphs_round_trip_through_graph_def():
    scale = np.float32(3.0)

    def build():
        weights = tf.constant(np.array([1.0, -2.0], np.float32))
        ds = (Dataset.from_tensor_slices(np.arange(20, dtype=np.float32).reshape(10, 2))
              .map(lambda r: tf.reduce_sum(r * weights) * scale, num_parallel_calls=2)
              .filter(lambda s: s < 0.0)
              .shuffle(4, seed=5)
              .interleave(lambda s: Dataset.from_tensors(s).repeat(2), cycle_length=2)
              .batch(3)
              .prefetch(1))
        return tf.compat.v1.data.make_one_shot_iterator(ds).get_next()

    want, got, graph_def = _graph_def_round_trip(build)
    rows = np.arange(20, dtype=np.float32).reshape(10, 2)
    sums = (rows @ np.array([1.0, -2.0], np.float32)) * scale  # all negative: all kept
    assert len(want) == 7 and [len(w) for w in want] == [3] * 6 + [2]
    np.testing.assert_allclose(np.sort(np.concatenate(want)), np.sort(np.repeat(sums, 2)))
    for w, g in zip(want, got):
        np.testing.assert_array_equal(w, g)
    ops = {n.op for n in graph_def.node}
    assert {"OneShotIterator", "IteratorGetNext", "PrefetchDataset"} <= ops
    one_shot = next(n for n in graph_def.node if n.op == "OneShotIterator")
    assert one_shot.attr["dataset_factory"].func.name.startswith("_make_dataset")


def test_an_initializable_iterator_round_trips_through_graph_def():
    def build():
        ds = Dataset.range(7).map(lambda v: v * 3).batch(2, drop_remainder=True)
        it = tf.compat.v1.data.make_initializable_iterator(ds)
        tf.add_to_collection("init", it.initializer)
        return it.get_next()

    with tf.Graph().as_default() as g1:
        x1 = build()
    graph_def = g1.as_graph_def()
    with tf.Graph().as_default() as g2:
        tf.import_graph_def(graph_def, name="")
        x2 = g2.get_tensor_by_name(x1.name)
        init = g2.get_operation_by_name(g1.get_collection("init")[0].name)
        with tf.Session() as sess:
            sess.run(init)
            got = read_all(sess, x2)
    assert [g.tolist() for g in got] == [[0, 3], [6, 9], [12, 15]]


def test_a_graph_def_joining_a_dataset_to_an_iterator_of_other_dtypes_fails_when_run():
    # A GraphDef is not checked by the Python API: MakeIterator checks when it runs.
    g = tf.get_default_graph()
    ds = Dataset.range(3)
    it = tf.data.Iterator.from_structure(tf.float32, [])
    init = g.create_op("MakeIterator", [ds._variant, it._resource], {})
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match=r"\['float32'\].*\['int64'\]"):
        sess.run(init)


def test_a_func_attr_without_its_body_is_invalid_argument():
    from nbcluster.framework import graph_def as graph_def_lib
    from nbcluster.proto import graph_pb2

    node = graph_pb2.NodeDef(name="m", op="MapDataset")
    node.attr["f"].func.name = "tf_library_function"
    with pytest.raises(tf.errors.InvalidArgumentError, match="tf_library_function.*body"):
        graph_def_lib.node_from_proto(node)


def test_concurrent_get_next_never_splits_or_repeats_an_element():
    import threading

    x = tf.compat.v1.data.make_one_shot_iterator(
        Dataset.range(400).map(lambda v: (v, v * 2)).prefetch(3)).get_next()
    got, errors_seen = [], []
    with tf.Session() as sess:
        def reader():
            try:
                got.extend(read_all(sess, x))
            except Exception as e:  # noqa: BLE001 - reported by the assertion below
                errors_seen.append(e)
        threads = [threading.Thread(target=reader) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(50)
    assert not errors_seen and not any(t.is_alive() for t in threads)
    assert sorted(int(a) for a, _ in got) == list(range(400))
    assert all(int(b) == 2 * int(a) for a, b in got)


def test_re_initialising_a_prefetching_iterator_stops_the_old_prefetch_thread():
    import threading
    import time

    it = Dataset.range(10_000).prefetch(2).make_initializable_iterator()
    x = it.get_next()

    def prefetchers() -> int:
        return sum(t.name == "nbcluster-data-prefetch" for t in threading.enumerate())

    before = prefetchers()
    with tf.Session() as sess:
        for _ in range(5):
            sess.run(it.initializer)
            assert int(sess.run(x)) == 0
        deadline = time.monotonic() + 30
        while prefetchers() > before + 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert prefetchers() <= before + 1  # only the current pass's thread is left


def test_apply_hands_the_dataset_to_a_function():
    ds = Dataset.range(6).apply(lambda d: d.filter(lambda v: v > 2))
    with tf.Session() as sess:
        assert [int(v) for v in read_all(sess, tf.compat.v1.data.make_one_shot_iterator(
            ds).get_next())] == [3, 4, 5]
    with pytest.raises(TypeError, match="transformation_func"):
        Dataset.range(1).apply(lambda d: 3)


def test_dicts_are_one_structure_whatever_their_key_order():
    ds = Dataset.from_tensor_slices({"b": np.arange(3), "a": np.ones(3, np.float32)})
    it = tf.data.Iterator.from_structure({"a": tf.float32, "b": tf.int64},
                                         {"a": [], "b": []})
    init = it.make_initializer(ds)
    nxt = it.get_next()
    with tf.Session() as sess:
        sess.run(init)
        got = sess.run(nxt)
    assert got == {"a": 1.0, "b": 0} and list(got) == ["a", "b"]


_TF_GRAPHS = r"""
import sys
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
plain, mapped = sys.argv[1:3]
with tf.Graph().as_default() as g:
    ds = tf.data.Dataset.from_tensor_slices(tf.constant([[1., 2.], [3., 4.], [5., 6.]]))
    ds = tf.data.Dataset.zip((ds.repeat(2).skip(1).take(4).batch(3),
                              tf.data.Dataset.range(5).shuffle(5, seed=3)))
    it = tf.data.make_initializable_iterator(ds)
    it.get_next()
    open(plain, "wb").write(g.as_graph_def().SerializeToString())
with tf.Graph().as_default() as g:
    tf.data.make_one_shot_iterator(tf.data.Dataset.range(3).map(lambda v: v + 1)).get_next()
    open(mapped, "wb").write(g.as_graph_def().SerializeToString())
"""


@requires_tensorflow
def test_a_tensorflow_graph_def_of_a_pipeline_imports_and_runs(tmp_path):
    import os
    import subprocess
    import sys

    plain, mapped = tmp_path / "plain.pb", tmp_path / "mapped.pb"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    out = subprocess.run([sys.executable, "-c", _TF_GRAPHS, str(plain), str(mapped)],
                         capture_output=True, text=True, timeout=100, env=env, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    tf.import_graph_def(tf.GraphDef.FromString(plain.read_bytes()), name="")
    g = tf.get_default_graph()
    x, n = g.get_tensor_by_name("IteratorGetNext:0"), g.get_tensor_by_name("IteratorGetNext:1")
    with tf.Session() as sess:
        sess.run(g.get_operation_by_name("MakeIterator"))
        got = read_all(sess, [x, n])
    rows = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]] * 2, np.float32)[1:5]
    assert len(got) == 2 and {int(b) for _, b in got} <= set(range(5))
    assert g.get_operation_by_name("ShuffleDataset").type == "ShuffleDataset"  # TF1's op
    np.testing.assert_array_equal(np.concatenate([a for a, _ in got]), rows)
    # TF keeps a map's function in the GraphDef library: it rides in the map's attr
    with tf.Graph().as_default() as g:
        tf.import_graph_def(tf.GraphDef.FromString(mapped.read_bytes()), name="")
        with tf.Session() as sess:
            assert read_all(sess, g.get_tensor_by_name("IteratorGetNext:0")) == [1, 2, 3]
