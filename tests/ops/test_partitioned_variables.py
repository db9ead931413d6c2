"""Partitioned variables: shards named and sized as TF's, spread over ps tasks by the
device setter, read whole by concatenation, looked up shard by shard (mod and div), and
trained sparsely on real ps processes."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster.ops.partitioned_variables import shard_sizes

pytestmark = pytest.mark.timeout(90)

TABLE = np.arange(10 * 3, dtype=np.float32).reshape(10, 3)


def test_shards_are_named_sized_and_read_whole_as_tf_does():
    assert shard_sizes(10, 3) == [4, 3, 3] and shard_sizes(2, 2) == [1, 1]
    with tf.variable_scope("model"):
        emb = tf.get_variable("emb", [10, 3], initializer=tf.constant_initializer(0.0),
                              partitioner=tf.fixed_size_partitioner(3))
    assert isinstance(emb, tf.PartitionedVariable) and len(emb) == 3
    assert [v.op.name for v in emb] == ["model/emb/part_0", "model/emb/part_1",
                                        "model/emb/part_2"]
    assert [v.shape.as_list() for v in emb] == [[4, 3], [3, 3], [3, 3]]
    assert emb.get_shape().as_list() == [10, 3] and emb.dtype == tf.float32
    with tf.variable_scope("model", reuse=True):
        assert tf.get_variable("emb") is emb
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v, start in zip(emb, (0, 4, 7)):
            sess.run(v.assign(TABLE[start:start + v.shape[0]]))
        np.testing.assert_array_equal(sess.run(emb.as_tensor()), TABLE)
        np.testing.assert_array_equal(sess.run(tf.reduce_sum(emb, 0)), TABLE.sum(0))
    assert len(tf.fixed_size_partitioner(5)(shape=tf.TensorShape([2, 4]))) == 2


def test_size_based_partitioners_follow_tfs_arithmetic():
    shape, f32 = tf.TensorShape([1024, 1024]), tf.float32  # 4 MiB, 4 KiB a row
    assert tf.min_max_variable_partitioner(16)(shape, f32) == [16, 1]
    assert tf.min_max_variable_partitioner(4)(shape, f32) == [4, 1]
    assert tf.min_max_variable_partitioner(10 ** 6, min_slice_size=1)(
        tf.TensorShape([6, 2]), f32) == [6, 1]  # never more shards than rows
    assert tf.min_max_variable_partitioner(8, axis=1, min_slice_size=1)(
        tf.TensorShape([3, 5]), tf.string) == [1, 5]
    with pytest.raises(ValueError, match="along axis 2 when shape is only"):
        tf.min_max_variable_partitioner(2, axis=2)(tf.TensorShape([3, 5]), f32)
    cut = tf.variable_axis_size_partitioner
    assert cut(1 << 20)(shape, f32) == [4, 1]  # 256 rows of 4 KiB a shard
    assert cut((1 << 20) + 100)(shape, f32) == [4, 1]  # rows are never split
    assert cut(1)(tf.TensorShape([3, 2]), f32) == [3, 1]  # one slice per shard at least
    assert cut(1 << 20, max_shards=2)(shape, f32) == [2, 1]
    assert cut(64, axis=1, bytes_per_string_element=8)(tf.TensorShape([4, 5]), tf.string) \
        == [1, 3]  # 32 bytes a column, two columns a shard
    with pytest.raises(ValueError, match="must be positive"):
        cut(0)
    with pytest.raises(ValueError, match="max_shards must be positive"):
        cut(10, max_shards=-1)
    with pytest.raises(ValueError, match="not fully defined"):
        cut(10)(tf.TensorShape([None, 2]), f32)


def test_a_size_partitioner_shards_get_variable():
    emb = tf.get_variable("emb", [1000, 8], initializer=tf.zeros_initializer(),
                          partitioner=tf.variable_axis_size_partitioner(8 * 4 * 300))
    assert [v.shape.as_list() for v in emb] == [[250, 8]] * 4


def test_shards_land_on_different_ps_tasks():
    spec = tf.train.ClusterSpec({"ps": ["127.0.0.1:1", "127.0.0.1:2"], "worker": ["127.0.0.1:3"]})
    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        emb = tf.get_variable("emb", [100, 8], partitioner=tf.fixed_size_partitioner(2))
    assert [v.device for v in emb] == ["/job:ps/task:0", "/job:ps/task:1"]


def test_glorot_shards_scale_by_the_whole_variable():
    emb = tf.get_variable("big", [2000, 100], partitioner=tf.fixed_size_partitioner(4),
                          initializer=tf.glorot_uniform_initializer(seed=2))
    limit = np.sqrt(6.0 / (2000 + 100))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = sess.run(emb.as_tensor())
    assert np.abs(values).max() <= limit and np.abs(values).max() > 0.95 * limit


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_a_sharded_lookup_equals_the_whole_tables(strategy):
    shards = 3
    sizes = shard_sizes(10, shards)
    if strategy == "mod":  # shard i holds rows i, i + n, i + 2n, ...
        parts = [TABLE[i::shards] for i in range(shards)]
    else:  # contiguous blocks
        starts = np.cumsum([0] + sizes)
        parts = [TABLE[starts[i]:starts[i + 1]] for i in range(shards)]
    ids = np.array([[9, 0, 4], [4, 7, 1]])
    rows = tf.nn.embedding_lookup([tf.constant(p) for p in parts], ids,
                                  partition_strategy=strategy)
    assert rows.shape.as_list() == [2, 3, 3]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(rows), TABLE[ids])


def test_a_sharded_embedding_trains_sparsely_on_two_ps_processes(cluster_factory):
    cluster = cluster_factory({"ps": 2, "worker": 1}, timeout=60)
    graph = tf.Graph()
    with graph.as_default(), tf.device(tf.train.replica_device_setter(cluster=cluster.spec)):
        emb = tf.get_variable("emb", [4000, 16], partitioner=tf.fixed_size_partitioner(2),
                              initializer=tf.random_normal_initializer(stddev=0.1, seed=3))
        ids = tf.placeholder(tf.int32, [8])
        # "div": shard blocks follow the ids, so as_tensor() is the table in id order
        rows = tf.nn.embedding_lookup(emb, ids, partition_strategy="div")
        loss = tf.reduce_mean(tf.square(tf.reduce_sum(rows, 1) - 1.0))
        opt = tf.train.GradientDescentOptimizer(0.1)
        grads = opt.compute_gradients(loss)
        train = opt.apply_gradients(grads)
        init = tf.global_variables_initializer()
    assert all(isinstance(g, tf.IndexedSlices) for g, _ in grads)
    assert [v.device for v in emb] == ["/job:ps/task:0", "/job:ps/task:1"]
    rng = np.random.default_rng(4)
    vocab = rng.choice(4000, 64, replace=False)  # rows of both shards
    assert (vocab < 2000).any() and (vocab >= 2000).any()
    batches = [rng.choice(vocab, 8, replace=False) for _ in range(30)]
    with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
        sess.run(init)
        before = sess.run(emb.as_tensor())
        first = sess.run(loss, {ids: batches[0]})
        for batch in batches:
            sess.run(train, {ids: batch})
        last = np.mean([sess.run(loss, {ids: b}) for b in batches[:5]])
        after = sess.run(emb.as_tensor())
    assert last < 0.5 * first, (first, last)
    touched = np.unique(np.concatenate(batches))
    untouched = np.setdiff1d(np.arange(4000), touched)
    np.testing.assert_array_equal(after[untouched], before[untouched])
    assert not np.allclose(after[touched], before[touched])
