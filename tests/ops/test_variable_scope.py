"""tf.variable_scope and tf.get_variable: names, creation once, sharing on reuse, errors,
defaults inherited from scopes, and placement by device functions."""
import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)


def test_names_follow_variable_scopes_not_name_scopes():
    with tf.variable_scope("model"):
        with tf.name_scope("extra"):
            w = tf.get_variable("w", [3, 2])
        with tf.variable_scope("layer1"):
            b = tf.get_variable("b", [2], initializer=tf.zeros_initializer())
            y = tf.identity(b, name="y")
    assert w.name == "model/w:0" and b.name == "model/layer1/b:0"
    assert y.name == "model/layer1/y:0"  # ops still follow the name scope
    assert tf.get_variable_scope().name == ""
    assert tf.global_variables() == [w, b] and tf.trainable_variables() == [w, b]
    assert w.initializer.name == "model/w/Assign"


def test_a_second_get_variable_needs_reuse_and_then_gets_the_same_variable():
    with tf.variable_scope("s"):
        v = tf.get_variable("v", [2])
    with pytest.raises(ValueError, match="Variable s/v already exists, disallowed"):
        with tf.variable_scope("s"):
            tf.get_variable("v", [2])
    with tf.variable_scope("s", reuse=True):
        assert tf.get_variable("v", [2]) is v
        assert tf.get_variable("v") is v  # the shape may be left out when sharing
        with pytest.raises(ValueError, match="Variable s/new does not exist"):
            tf.get_variable("new", [1])
    with tf.variable_scope("s") as scope:
        scope.reuse_variables()
        assert tf.get_variable("v") is v
    assert len(tf.global_variables()) == 1


def test_auto_reuse_creates_once_then_shares():
    def layer(x):
        with tf.variable_scope("dense", reuse=tf.AUTO_REUSE):
            w = tf.get_variable("w", [4, 3], initializer=tf.ones_initializer())
            return tf.matmul(x, w)
    x = tf.constant(np.ones((2, 4), np.float32))
    a, b = layer(x), layer(x * 2.0)
    assert [v.name for v in tf.global_variables()] == ["dense/w:0"]
    assert a.op.name == "dense/MatMul" and b.op.name == "dense_1/MatMul"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(b), np.full((2, 3), 8.0, np.float32))


def test_reuse_is_inherited_and_a_scope_object_reenters_exactly():
    with tf.variable_scope("outer") as outer:
        v = tf.get_variable("inner/v", [1])
    with tf.variable_scope(outer, reuse=True):
        with tf.variable_scope("inner", reuse=False):  # False cannot undo inherited reuse
            assert tf.get_variable_scope().reuse is True
            assert tf.get_variable("v") is v
    with tf.variable_scope(outer):
        assert tf.get_variable_scope().name == "outer"
        assert tf.identity(1.0, name="x").name == "outer/x:0"  # the same name scope


def test_default_names_are_made_unique():
    names = []
    for _ in range(3):
        with tf.variable_scope(None, default_name="block"):
            names.append(tf.get_variable("k", [1]).name)
    assert names == ["block/k:0", "block_1/k:0", "block_2/k:0"]
    with pytest.raises(ValueError, match="name_or_scope or a default_name"):
        with tf.variable_scope(None):
            pass


def test_sharing_checks_shape_and_dtype():
    with tf.variable_scope("c"):
        tf.get_variable("v", [2, 3])
    with tf.variable_scope("c", reuse=True):
        with pytest.raises(ValueError, match=r"specified shape \(3, 2\) and found shape "
                                             r"\(2, 3\)"):
            tf.get_variable("v", [3, 2])
        with pytest.raises(ValueError, match="specified dtype float64 and found dtype float32"):
            tf.get_variable("v", [2, 3], dtype=tf.float64)


def test_initializers_and_dtypes_come_from_the_scope_unless_given():
    with tf.variable_scope("d", initializer=tf.constant_initializer(3.0), dtype=tf.float64):
        a = tf.get_variable("a", [2])
        b = tf.get_variable("b", [2], initializer=tf.zeros_initializer(), dtype=tf.float32)
        c = tf.get_variable("c", initializer=tf.constant([1, 2], tf.int32))
        n = tf.get_variable("n", [3], dtype=tf.int64)  # the scope's initializer, cast
    z = tf.get_variable("z", [2], dtype=tf.int32)  # no initializer: integers get zeros
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        va, vb, vc, vn, vz = sess.run([a, b, c, n, z])
    assert va.dtype == np.float64 and va.tolist() == [3.0, 3.0]
    assert vb.dtype == np.float32 and vb.tolist() == [0.0, 0.0]
    assert vc.tolist() == [1, 2] and vn.dtype == np.int64 and vn.tolist() == [3, 3, 3]
    assert vz.dtype == np.int32 and vz.tolist() == [0, 0]


def test_bad_get_variable_calls_name_the_variable():
    with pytest.raises(ValueError, match="Shape of a new variable \\(nos\\) must be fully "
                                         "defined"):
        tf.get_variable("nos")
    with pytest.raises(ValueError, match="do not specify shape \\(variable k\\)"):
        tf.get_variable("k", [2], initializer=tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="initializer for variable s of type string"):
        tf.get_variable("s", [1], dtype=tf.string)
    with pytest.raises(NotImplementedError, match="custom getters"):
        tf.get_variable("p", [4], custom_getter=lambda getter, *a, **k: getter(*a, **k))
    with pytest.raises(ValueError, match="reuse must be"):
        with tf.variable_scope("r", reuse="yes"):
            pass
    tf.Variable(0.0, name="taken")
    with pytest.raises(ValueError, match="Variable taken: the graph already has an op"):
        tf.get_variable("taken", [])


def test_get_variable_honours_device_functions_and_local_collections():
    spec = tf.train.ClusterSpec({"ps": ["127.0.0.1:1", "127.0.0.1:2"], "worker": ["127.0.0.1:3"]})
    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        with tf.variable_scope("net"):
            w = tf.get_variable("w", [2, 2])
            b = tf.get_variable("b", [2])
            steps = tf.get_variable("steps", [], tf.int64, trainable=False,
                                    collections=[tf.GraphKeys.LOCAL_VARIABLES])
    assert w.device == "/job:ps/task:0" and b.device == "/job:ps/task:1"
    assert tf.local_variables() == [steps] and steps not in tf.global_variables()
    assert tf.trainable_variables() == [w, b]
    with tf.Graph().as_default():
        with tf.variable_scope("net"):  # another graph: its own store
            assert tf.get_variable("w", [2, 2]).graph is tf.get_default_graph()


def test_local_variables_initializer_runs_only_local_ones():
    g = tf.get_variable("g", [], initializer=tf.ones_initializer())
    loc = tf.get_variable("loc", [], initializer=tf.constant_initializer(5.0),
                          collections=[tf.GraphKeys.LOCAL_VARIABLES], trainable=False)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(loc) == 5.0
        assert not sess.run(tf.is_variable_initialized(g))
