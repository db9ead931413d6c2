"""NoOp, group, tuple and with_dependencies: control inputs and run order."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster.ops.control import tuple as tf_tuple
from nbcluster.ops.control import with_dependencies

pytestmark = pytest.mark.timeout(60)



def test_no_op():
    op = tf.no_op()
    assert op.type == "NoOp" and op.name == "NoOp" and op.outputs == ()
    assert tf.no_op(name="nothing").name == "nothing"
    with tf.Session() as sess:
        assert sess.run(op) is None


def test_group_has_control_inputs_on_all():
    a, b = tf.constant(1.0), tf.constant(2.0)
    c = tf.identity(a)
    g = tf.group(a, [b, c.op])
    assert g.type == "NoOp" and g.name == "group_deps" and g.inputs == ()
    assert {op.name for op in g.control_inputs} == {a.op.name, b.op.name, c.op.name}
    assert tf.group(a, name="train").name == "train"
    empty = tf.group()
    assert empty.type == "NoOp" and empty.control_inputs == []
    with tf.Session() as sess:
        assert sess.run(g) is None


def test_group_rejects_unknown_kwargs_and_non_tensors():
    with pytest.raises(ValueError, match="Unknown keyword arguments: foo"):
        tf.group(tf.constant(1), foo=1)
    with pytest.raises(TypeError, match="expected Tensor arguments"):
        tf.group(3)


def test_group_per_device_tree(fresh_graph):
    with fresh_graph.device("/cpu:0"):
        a = tf.constant(1.0)
    with fresh_graph.device("/job:localhost/task:0/device:CPU:0"):
        b = tf.constant(2.0)
    c = tf.constant(3.0)
    g = tf.group(a, b, c)
    assert g.name == "group_deps"
    inner = g.control_inputs
    assert len(inner) == 3 and all(op.type == "NoOp" for op in inner)
    assert sorted(op.name for op in inner) == ["group_deps/NoOp", "group_deps/NoOp_1",
                                               "group_deps/NoOp_2"]
    devices = {op.control_inputs[0].name: op.device for op in inner}
    assert devices[c.op.name] == "" and devices[a.op.name] == a.op.device
    single = tf.group(a)
    assert single.device == a.op.device and single.control_inputs == [a.op]


def test_group_orders_side_effects():
    x = tf.placeholder(tf.float32, [2])
    g = tf.group(tf.identity(x))
    with tf.Session() as sess:
        assert sess.run(g, {x: np.ones(2, np.float32)}) is None
        with pytest.raises(tf.errors.InvalidArgumentError, match="You must feed a value"):
            sess.run(g)


def test_with_dependencies_and_tuple():
    x = tf.placeholder(tf.float32, [])
    a = tf.constant(5.0)
    gated = with_dependencies([tf.identity(x).op], a)
    assert gated.op.type == "Identity" and gated.op.name == "control_dependency"
    assert gated.op.colocation_groups() == [f"loc:@{a.op.name}"]
    with tf.Session() as sess:
        assert sess.run(gated, {x: 1.0}) == 5.0
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(gated)
    b = tf.constant([1, 2])
    n = tf.no_op()
    t1, t2, t3, t4 = tf_tuple([a, b, n, None])
    assert t1.op.type == "Identity" and t2.shape.as_list() == [2] and t4 is None
    assert t3.type == "NoOp"
    gate = t1.op.control_inputs[0]
    assert gate.type == "NoOp" and gate.name == "tuple/group_deps"
    assert {op.name for op in gate.control_inputs} == {a.op.name, b.op.name, n.name}
    with tf.Session() as sess:
        v1, v2 = sess.run([t1, t2])
    assert v1 == 5.0 and list(v2) == [1, 2]
    with pytest.raises(ValueError, match="Must have at least one Tensor"):
        tf_tuple([None])
