"""TF2's partitioners and ShardedVariable, without a cluster: shard counts, shard
sizes and placement, reading, assigning and looking up as TF does."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster.distribute.cluster_resolver import SimpleClusterResolver
from nbcluster.distribute.experimental import ParameterServerStrategy
from nbcluster.distribute.experimental.partitioners import (
    FixedShardsPartitioner,
    MaxSizePartitioner,
    MinSizePartitioner,
)
from nbcluster.distribute.sharded_variable import create_sharded

pytestmark = pytest.mark.timeout(30)

SPEC = {"ps": ["127.0.0.1:1", "127.0.0.1:2"], "worker": ["127.0.0.1:3"]}
TABLE = np.arange(10 * 3, dtype=np.float32).reshape(10, 3)


def sharded_strategy(partitioner):
    return ParameterServerStrategy(SimpleClusterResolver(SPEC, rpc_layer="grpc"),
                                   variable_partitioner=partitioner)


def test_partitioners_follow_tfs_documented_examples():
    shape, f32 = tf.TensorShape([6, 1]), tf.float32
    assert tf.distribute.experimental.partitioners.FixedShardsPartitioner is \
        FixedShardsPartitioner
    assert FixedShardsPartitioner(2)(tf.TensorShape([10, 3]), f32) == [2, 1]
    assert FixedShardsPartitioner(20)(tf.TensorShape([10, 3]), f32) == [10, 1]
    assert FixedShardsPartitioner(2)(tf.TensorShape([3, 10]), f32, axis=1) == [1, 2]
    assert MinSizePartitioner(min_shard_bytes=4, max_shards=2)(shape, f32) == [2, 1]
    assert MinSizePartitioner(min_shard_bytes=4, max_shards=10)(shape, f32) == [6, 1]
    assert MinSizePartitioner()(tf.TensorShape([1024, 1024]), f32) == [1, 1]  # 1 shard max
    assert MaxSizePartitioner(max_shard_bytes=4)(shape, f32) == [6, 1]
    assert MaxSizePartitioner(max_shard_bytes=4, max_shards=2)(shape, f32) == [2, 1]
    assert MaxSizePartitioner(max_shard_bytes=1024)(shape, f32) == [1, 1]
    assert MaxSizePartitioner(max_shard_bytes=32, bytes_per_string=16)(
        tf.TensorShape([5, 1]), tf.string) == [3, 1]
    for bad in (lambda: MinSizePartitioner(min_shard_bytes=0),
                lambda: MinSizePartitioner(max_shards=0),
                lambda: MaxSizePartitioner(max_shard_bytes=0),
                lambda: MaxSizePartitioner(10, max_shards=-2),
                lambda: MaxSizePartitioner(10, bytes_per_string=0)):
        with pytest.raises(ValueError, match="must be positive"):
            bad()


def test_a_partitioned_variable_is_sharded_round_robin_over_the_ps(fresh_graph):
    strategy = sharded_strategy(FixedShardsPartitioner(3))
    with strategy.scope():
        table = tf.Variable(TABLE, name="table")
        bias = tf.Variable(np.zeros(3, np.float32), name="bias")  # 3 rows: 3 shards too
        scalar = tf.Variable(1.0, name="scalar")  # rank 0: never cut
    assert isinstance(table, tf.distribute.ShardedVariable)
    assert [v.op.name for v in table.variables] == ["table/part_0", "table/part_1",
                                                    "table/part_2"]
    assert [v.shape.as_list() for v in table.variables] == [[4, 3], [3, 3], [3, 3]]
    assert table.shape.as_list() == [10, 3] and table.dtype == tf.float32
    devices = [v.device for v in table.variables] + [v.device for v in bias.variables]
    assert devices == [f"/job:ps/replica:0/task:{i % 2}/device:CPU:0" for i in range(6)]
    assert isinstance(scalar, tf.Variable) and scalar.device.startswith("/job:ps")
    assert set(tf.trainable_variables()) == set(table.variables) | set(bias.variables) | \
        {scalar}


def sharding(partitioner):
    """The strategy's sharding without its ps placement, for a local Session."""
    return tf.variable_creator_scope(
        lambda next_creator, **kwargs: create_sharded(next_creator, partitioner, kwargs))


def test_a_sharded_variable_reads_assigns_and_looks_up_as_the_whole():
    with sharding(FixedShardsPartitioner(3)):
        table = tf.Variable(TABLE, name="table")
    ids = tf.constant([[9, 0], [4, 3]])
    rows = tf.nn.embedding_lookup(table, ids)  # "div": shard 0 holds rows 0-3
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(table.variables[1]), TABLE[4:7])
        np.testing.assert_array_equal(sess.run(tf.convert_to_tensor(table)), TABLE)
        np.testing.assert_array_equal(sess.run(table), TABLE)
        np.testing.assert_array_equal(sess.run(rows), TABLE[[[9, 0], [4, 3]]])
        np.testing.assert_allclose(sess.run(tf.matmul(tf.ones([1, 10]), table)),
                                   TABLE.sum(0, keepdims=True))
        np.testing.assert_array_equal(sess.run(table[8]), TABLE[8])
        sess.run(table.assign(-TABLE))
        np.testing.assert_array_equal(sess.run(table.variables[2]), -TABLE[7:])
        np.testing.assert_array_equal(sess.run(table.assign_add(TABLE * 2)), TABLE)
        sess.run(table.assign_sub(TABLE, read_value=False))
        np.testing.assert_array_equal(sess.run(table), np.zeros_like(TABLE))


def test_a_partitioner_giving_one_shard_makes_a_plain_variable():
    strategy = sharded_strategy(MaxSizePartitioner(max_shard_bytes=1 << 20))
    with strategy.scope():
        small = tf.Variable(TABLE, name="small")
        from_fn = tf.Variable(lambda: tf.zeros([8, 2]), shape=[8, 2], dtype=tf.float32)
    assert isinstance(small, tf.Variable) and small.op.name == "small"
    assert isinstance(from_fn, tf.Variable)


def test_initializer_functions_are_cut_per_shard():
    with sharding(FixedShardsPartitioner(2)):
        v = tf.Variable(lambda: tf.constant(TABLE[:5]), shape=[5, 3], dtype=tf.float32,
                        name="lazy")
    assert [s.shape.as_list() for s in v.variables] == [[3, 3], [2, 3]]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(v.variables[1]), TABLE[3:5])


def test_a_partitioner_cutting_another_axis_is_refused():
    strategy = sharded_strategy(lambda shape, dtype: [1, 2])
    with strategy.scope():
        with pytest.raises(ValueError, match="1 besides the first element"):
            tf.Variable(TABLE)


def test_variable_creator_scope_is_per_thread_and_chains():
    import threading

    calls = []

    def outer(next_creator, **kwargs):
        calls.append("outer")
        return next_creator(**kwargs)

    def inner(next_creator, **kwargs):
        calls.append("inner")
        return next_creator(**dict(kwargs, initial_value=kwargs["initial_value"] * 2))

    with tf.variable_creator_scope(outer), tf.variable_creator_scope(inner):
        v = tf.Variable(3.0)
        other = []
        t = threading.Thread(target=lambda: other.append(tf.Variable(1.0)))
        t.start()
        t.join()
    assert calls == ["inner", "outer"]  # innermost first; the other thread saw neither
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(v) == 6.0


def test_compute_average_loss_and_input_context():
    losses = tf.constant([1.0, 2.0, 3.0, 6.0])
    with tf.Session() as sess:
        assert sess.run(tf.nn.compute_average_loss(losses)) == 3.0
        assert sess.run(tf.nn.compute_average_loss(losses, global_batch_size=8)) == 1.5
        assert sess.run(tf.nn.compute_average_loss(
            losses, sample_weight=[1.0, 0.0, 0.0, 0.5], global_batch_size=2)) == 2.0
        batch = tf.placeholder(tf.float32, [None])
        assert sess.run(tf.nn.compute_average_loss(batch), {batch: [2.0, 4.0]}) == 3.0
    with pytest.raises(ValueError, match="at least rank 1"):
        tf.nn.compute_average_loss(tf.constant(1.0))
    with pytest.raises(ValueError, match="must be positive"):
        tf.nn.compute_average_loss(losses, global_batch_size=0)
    with pytest.raises(ValueError, match="integer scalar"):
        tf.nn.compute_average_loss(losses, global_batch_size=2.5)
    ctx = tf.distribute.InputContext(2, 1, 4)
    assert (ctx.num_input_pipelines, ctx.input_pipeline_id) == (2, 1)
    assert ctx.get_per_replica_batch_size(64) == 16
    with pytest.raises(ValueError, match="not divisible"):
        ctx.get_per_replica_batch_size(10)
    strategy = sharded_strategy(None)
    seen = []
    assert strategy.distribute_datasets_from_function(
        lambda c: seen.append(c) or "data") == "data"
    assert (seen[0].num_input_pipelines, seen[0].input_pipeline_id,
            seen[0].num_replicas_in_sync) == (1, 0, 1)
