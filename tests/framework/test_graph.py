"""Graph building as TF 1.x does it: names, scopes, lookups, GraphDef round trips."""
import threading

import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph


def _classes(op) -> list:
    return [c.decode() if isinstance(c, bytes) else c for c in op.get_attr("_class")]


# -- default graph -------------------------------------------------------------
def test_as_default_nests_and_restores(fresh_graph):
    assert tf.get_default_graph() is fresh_graph
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default() as entered:
        assert entered is g1 and tf.get_default_graph() is g1
        with g2.as_default():
            assert tf.get_default_graph() is g2
            assert tf.constant(1.0).graph is g2
        assert tf.get_default_graph() is g1
    assert tf.get_default_graph() is fresh_graph


def test_default_graph_is_per_thread(fresh_graph):
    seen = []
    thread = threading.Thread(target=lambda: seen.append(tf.get_default_graph()))
    thread.start()
    thread.join()
    # A new thread does not see this thread's `as_default` stack.
    assert seen[0] is not fresh_graph


def test_reset_default_graph_inside_a_graph_block_raises():
    with pytest.raises(AssertionError, match="nested graphs"):
        tf.reset_default_graph()


def test_reset_default_graph_outside_blocks_replaces_global_default():
    box = []

    def body():  # a fresh thread has no `as_default` stack
        before = tf.get_default_graph()
        tf.constant(1.0, name="x")
        tf.reset_default_graph()
        after = tf.get_default_graph()
        box.append((before, after, after.get_operations()))

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    before, after, ops = box[0]
    assert after is not before and ops == []


# -- lookups ---------------------------------------------------------------------
def test_get_tensor_and_operation_by_name():
    c = tf.constant([1.0, 2.0], name="c")
    g = tf.get_default_graph()
    assert g.get_tensor_by_name("c:0") is c
    assert g.get_operation_by_name("c") is c.op
    assert g.as_graph_element("c:0") is c and g.as_graph_element("c") is c.op


@pytest.mark.parametrize("bad, error", [
    ("c", ValueError),          # an Operation name, not a Tensor name
    ("c:x", ValueError),        # not <op>:<int>
    ("missing:0", KeyError),    # no such op
    ("c:1", KeyError),          # op has one output
    (7, TypeError),
])
def test_get_tensor_by_name_errors(bad, error):
    tf.constant(1.0, name="c")
    with pytest.raises(error):
        tf.get_default_graph().get_tensor_by_name(bad)


@pytest.mark.parametrize("bad, error", [
    ("c:0", ValueError),        # a Tensor name
    ("missing", KeyError),
    (7, TypeError),
])
def test_get_operation_by_name_errors(bad, error):
    tf.constant(1.0, name="c")
    with pytest.raises(error):
        tf.get_default_graph().get_operation_by_name(bad)


def test_get_operations_in_creation_order():
    a = tf.constant(1.0, name="a")
    b = tf.identity(a, name="b")
    assert [op.name for op in tf.get_default_graph().get_operations()] == ["a", "b"]
    assert b.op.type == "Identity"


def test_operations_since_a_version_are_the_ops_added_after_it():
    g = tf.Graph()
    with g.as_default():
        tf.constant(1.0, name="a")
        version = g.version
        tf.constant(2.0, name="b")
        tf.constant(3.0, name="c")
    assert [op.name for op in g.operations_since(version)] == ["b", "c"]
    assert [op.name for op in g.operations_since(0)] == ["a", "b", "c"]
    assert g.operations_since(g.version) == []
    listed = g.operations_since(0)
    with g.as_default():
        tf.constant(4.0, name="d")
    assert len(listed) == 3  # a copy: later ops do not appear in it


# -- Operation / Tensor attributes ---------------------------------------------------
def test_tensor_and_operation_attributes():
    a = tf.constant([[1.0, 2.0, 3.0]], name="a")
    b = tf.identity(a, name="b")
    c = tf.add(a, b, name="c")
    assert a.name == "a:0" and a.value_index == 0 and a.op.name == "a"
    assert a.dtype == tf.float32 and a.shape == tf.TensorShape([1, 3])
    assert a.get_shape().as_list() == [1, 3]
    assert a.graph is tf.get_default_graph() is a.op.graph
    assert a.op.type == "Const" and a.op.outputs == (a,) and a.op.values() == (a,)
    assert list(c.op.inputs) == [a, b]
    assert set(a.consumers()) == {b.op, c.op}
    assert c.consumers() == []
    assert a.device == a.op.device == ""
    assert a.op.get_attr("dtype") == tf.float32
    with pytest.raises(ValueError):
        a.op.get_attr("no_such_attr")
    assert a.op.node_def.name == "a" and a.op.node_def.op == "Const"
    assert list(c.op.node_def.input) == ["a", "b"]


def test_tensor_set_shape_merges():
    p = tf.placeholder(tf.float32, shape=[None, 3])
    p.set_shape([2, None])
    assert p.shape.as_list() == [2, 3]
    with pytest.raises(ValueError):
        p.set_shape([4, 3])


def test_tensor_is_not_a_python_bool():
    with pytest.raises(TypeError):
        bool(tf.constant(True))


# -- names -----------------------------------------------------------------------
def test_name_uniquing():
    names = [tf.constant(1.0).op.name for _ in range(3)]
    assert names == ["Const", "Const_1", "Const_2"]
    assert tf.constant(1.0, name="x").name == "x:0"
    assert tf.constant(1.0, name="x").name == "x_1:0"
    # Uniquing is case-insensitive, as in TF.
    assert tf.constant(1.0, name="X").name == "X_2:0"


def test_name_scope_nesting_and_reentry():
    with tf.name_scope("foo") as foo:
        assert foo == "foo/"
        assert tf.constant(1.0, name="c").op.name == "foo/c"
        with tf.name_scope("bar") as bar:
            assert bar == "foo/bar/"
            assert tf.constant(1.0).op.name == "foo/bar/Const"
    with tf.name_scope("foo") as foo1:
        assert foo1 == "foo_1/"
        assert tf.constant(1.0, name="c").op.name == "foo_1/c"
    assert tf.get_default_graph().get_name_scope() == ""


def test_name_scope_trailing_slash_reenters_exactly():
    with tf.name_scope("foo") as foo:
        tf.constant(1.0, name="c")
    with tf.name_scope("other"):
        with tf.name_scope(foo) as again:
            assert again == "foo/"
            assert tf.constant(1.0, name="c").op.name == "foo/c_1"


def test_name_scope_none_resets_to_root():
    with tf.name_scope("outer"):
        with tf.name_scope(None) as root:
            assert root == ""
            assert tf.constant(1.0, name="top").op.name == "top"
        assert tf.constant(1.0, name="in").op.name == "outer/in"


def test_name_scope_default_name_and_values():
    with tf.name_scope(None, "default") as s:
        assert s == "default/"
    g = tf.Graph()
    with g.as_default():
        t = tf.constant(1.0)
    # `values` picks the graph the scope belongs to.
    with tf.name_scope("s", values=[t]) as s:
        assert s == "s/"
        assert g.get_name_scope() == "s"


def test_name_scope_collides_with_op_name():
    tf.constant(1.0, name="foo")
    with tf.name_scope("foo") as s:
        assert s == "foo_1/"


def test_invalid_scope_name():
    with pytest.raises(ValueError):
        with tf.name_scope("bad name!"):
            pass


# -- devices ---------------------------------------------------------------------
def test_device_strings_nest_and_merge():
    with tf.device("/job:ps"):
        a = tf.constant(1.0)
        with tf.device("/task:1"):
            b = tf.constant(1.0)
            with tf.device("/job:worker/cpu:0"):
                c = tf.constant(1.0)
    assert a.op.device == "/job:ps"
    assert b.op.device == "/job:ps/task:1"
    assert c.op.device == "/job:worker/task:1/device:CPU:0"
    assert tf.constant(1.0).op.device == ""


def test_device_spec_object():
    with tf.device(tf.DeviceSpec(job="ps", task=2)):
        a = tf.constant(1.0)
    assert a.device == "/job:ps/task:2"


def test_device_function_receives_op():
    seen = []

    def chooser(op):
        seen.append(op)
        return "/job:ps/task:0" if op.type == "Const" else "/job:worker/task:0"

    with tf.device(chooser):
        a = tf.constant(1.0, name="a")
        b = tf.identity(a, name="b")
    assert [op.name for op in seen] == ["a", "b"]
    assert all(isinstance(op, tf.Operation) for op in seen)
    assert a.device == "/job:ps/task:0" and b.device == "/job:worker/task:0"


def test_device_function_inside_string_scope_is_merged():
    with tf.device("/job:ps"):
        with tf.device(lambda op: "/task:3"):
            a = tf.constant(1.0)
    assert a.device == "/job:ps/task:3"


def test_device_none_clears_outer_scopes():
    with tf.device("/job:ps/task:0"):
        with tf.device(None):
            a = tf.constant(1.0)
            with tf.device("/cpu:0"):
                b = tf.constant(1.0)
    assert a.device == ""
    assert b.device == "/device:CPU:0"


# -- colocation -------------------------------------------------------------------
def test_colocate_with_sets_class_and_inherits_device():
    with tf.device("/job:ps/task:1"):
        a = tf.constant(1.0, name="a")
    with tf.device("/job:worker"):
        with tf.colocate_with(a):
            b = tf.identity(a, name="b")
    assert _classes(b.op) == ["loc:@a"]
    assert b.device == "/job:ps/task:1"
    assert b.op.colocation_groups() in (["loc:@a"], [b"loc:@a"])
    with tf.colocate_with(b.op):
        c = tf.identity(b, name="c")
    assert _classes(c.op) == ["loc:@a"]  # the group of b is a's group


def test_colocate_with_none_requires_ignore_existing():
    a = tf.constant(1.0, name="a")
    z = tf.constant(2.0, name="z")
    with pytest.raises(ValueError):
        with tf.colocate_with(None):
            pass
    with tf.colocate_with(a):
        with tf.colocate_with(z.op, ignore_existing=True):
            d = tf.constant(3.0)
        with tf.colocate_with(None, ignore_existing=True):
            e = tf.constant(4.0)
    assert _classes(d.op) == ["loc:@z"]
    with pytest.raises(ValueError):
        e.op.get_attr("_class")


# -- control dependencies ------------------------------------------------------------
def test_control_dependencies_nest_and_clear():
    a = tf.constant(1.0, name="a")
    b = tf.constant(2.0, name="b")
    with tf.control_dependencies([a]):
        c = tf.constant(3.0, name="c")
        with tf.control_dependencies([b.op]):
            d = tf.constant(4.0, name="d")
        with tf.control_dependencies(None):
            e = tf.constant(5.0, name="e")
            with tf.control_dependencies([b]):
                f = tf.constant(6.0, name="f")
    assert c.op.control_inputs == [a.op]
    assert {op.name for op in d.op.control_inputs} == {"a", "b"}
    assert e.op.control_inputs == []
    assert f.op.control_inputs == [b.op]
    assert list(d.op.node_def.input) in (["^a", "^b"], ["^b", "^a"])


def test_control_dependency_on_a_data_input_is_dropped():
    a = tf.constant(1.0, name="a")
    with tf.control_dependencies([a]):
        b = tf.identity(a)
    assert b.op.control_inputs == []


def test_op_fed_by_an_op_of_the_same_block_is_dominated():
    a = tf.constant(1.0, name="a")
    with tf.control_dependencies([a]):
        b = tf.constant(2.0, name="b")
        c = tf.identity(b, name="c")  # b already waits for a
    assert b.op.control_inputs == [a.op]
    assert c.op.control_inputs == []


def test_control_dependencies_are_run(fresh_graph):
    v = tf.Variable(0.0, name="v")
    inc = tf.assign_add(v, 1.0)
    with tf.control_dependencies([inc]):
        out = tf.constant(7.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(out) == 7.0
        assert sess.run(v) == 1.0


def test_control_dependencies_reject_non_ops():
    with pytest.raises(TypeError):
        with tf.control_dependencies([3]):
            pass


# -- container, finalize ----------------------------------------------------------------
def test_container_sets_attr_on_stateful_ops():
    with tf.container("experiment"):
        v = tf.Variable(1.0, name="v")
        c = tf.constant(1.0)
    w = tf.Variable(1.0, name="w")
    assert v.op.get_attr("container") == "experiment"
    assert w.op.get_attr("container") == ""
    with pytest.raises(ValueError):
        c.op.get_attr("container")


def test_finalize_forbids_new_ops(fresh_graph):
    tf.constant(1.0)
    fresh_graph.finalize()
    assert fresh_graph.finalized
    with pytest.raises(RuntimeError, match="finalized"):
        tf.constant(2.0)


# -- GraphDef round trip ------------------------------------------------------------------
def _build_source():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, shape=[2], name="x")
        w = tf.constant([2.0, 3.0], name="w")
        y = tf.multiply(x, w, name="y")
        with tf.control_dependencies([y]):
            z = tf.add(y, 1.0, name="z")
    return g, x, z


def test_as_graph_def_lists_nodes():
    g, _, z = _build_source()
    gd = g.as_graph_def()
    assert isinstance(gd, tf.GraphDef)
    assert [n.name for n in gd.node] == [op.name for op in g.get_operations()]
    by_name = {n.name: n for n in gd.node}
    assert by_name["y"].op == "Mul" and list(by_name["y"].input) == ["x", "w"]
    assert "^y" not in by_name["z"].input  # y is already a data input of z


def test_import_graph_def_round_trip_runs_the_same():
    g, x, z = _build_source()
    gd = g.as_graph_def()
    with tf.Session(graph=g) as sess:
        expected = sess.run(z, {x: [1.0, 2.0]})
    with tf.Graph().as_default() as g2:
        feed = tf.constant([1.0, 2.0], name="feed")
        z2, y_op = tf.import_graph_def(gd, input_map={"x:0": feed},
                                       return_elements=["z:0", "y"])
        assert z2.name == "import/z:0" and y_op.name == "import/y"
        assert isinstance(y_op, tf.Operation) and isinstance(z2, tf.Tensor)
        assert z2.dtype == tf.float32 and z2.shape.as_list() == [2]
        assert g2.get_operation_by_name("import/x").type == "Placeholder"
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(z2), expected)
            np.testing.assert_allclose(expected, [3.0, 7.0])


def test_import_graph_def_names_and_default_return():
    g, _, _ = _build_source()
    gd = g.as_graph_def()
    assert tf.import_graph_def(gd) is None
    (z,) = tf.import_graph_def(gd, return_elements=["z:0"])
    assert z.name == "import_1/z:0"
    (z,) = tf.import_graph_def(gd, return_elements=["z:0"], name="copy")
    assert z.name == "copy/z:0"
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(z, {"copy/x:0": [0.0, 1.0]}), [1.0, 4.0])


def test_import_graph_def_input_map_bare_op_name_means_output_0():
    g, _, _ = _build_source()
    feed = tf.constant([1.0, 1.0])
    (z,) = tf.import_graph_def(g.as_graph_def(), input_map={"x": feed},
                               return_elements=["z:0"])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(z), [3.0, 4.0])


def test_import_graph_def_unused_input_map_key_raises():
    g, _, _ = _build_source()
    with pytest.raises(ValueError, match="nope:0"):
        tf.import_graph_def(g.as_graph_def(), input_map={"nope:0": tf.constant(1.0)})


def test_graph_def_proto_survives_serialization():
    g, _, _ = _build_source()
    data = g.as_graph_def().SerializeToString()
    gd = tf.GraphDef.FromString(data)
    (z,) = tf.import_graph_def(gd, input_map={"x:0": tf.constant([1.0, 0.0])},
                               return_elements=["z:0"], name="")
    assert z.name == "z:0"
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(z), [3.0, 1.0])


# -- eval / run with a default session ---------------------------------------------------
def test_eval_and_run_need_a_default_session():
    c = tf.constant(3.0)
    op = tf.no_op()
    with pytest.raises(ValueError, match="default session"):
        c.eval()
    with pytest.raises(ValueError, match="default session"):
        op.run()


def test_eval_and_run_with_default_session():
    v = tf.Variable(2.0, name="v")
    p = tf.placeholder(tf.float32, [])
    with tf.Session() as sess:
        assert tf.get_default_session() is sess
        v.initializer.run()
        assert (v * p).eval(feed_dict={p: 4.0}) == 8.0
        assert v.eval() == 2.0
    assert tf.get_default_session() is None
    sess = tf.Session()
    try:
        with sess.as_default():
            assert tf.constant(5).eval() == 5
        assert tf.constant(6).eval(session=sess) == 6
    finally:
        sess.close()


def test_eval_with_session_of_another_graph_raises():
    c = tf.constant(1.0)
    with tf.Session(graph=tf.Graph()) as sess:
        with pytest.raises(ValueError):
            c.eval(session=sess)


def test_mixing_tensors_of_two_graphs_raises():
    a = tf.constant(1.0)
    with tf.Graph().as_default():
        b = tf.constant(2.0)
    with pytest.raises(ValueError):
        tf.add(a, b)
    with pytest.raises(ValueError):
        tf.get_default_graph().as_graph_element(b)


def test_scopes_are_per_thread():
    graph = tf.Graph()
    inside, built = threading.Event(), threading.Event()
    other = {}

    def build_elsewhere():
        inside.wait(10)
        with graph.as_default():
            other["op"] = tf.constant(1.0, name="c").op
            other["ctl"] = tf.no_op(name="n")
        built.set()

    thread = threading.Thread(target=build_elsewhere)
    thread.start()
    with graph.as_default(), graph.device("/job:ps/task:0"), graph.name_scope("scoped"), \
            graph.colocate_with(tf.constant(0.0, name="anchor").op), \
            graph.control_dependencies([tf.no_op(name="first")]):
        inside.set()
        assert built.wait(10)
        mine = tf.constant(2.0, name="c").op
    thread.join(10)
    assert (other["op"].name, other["op"].device, other["op"].control_inputs) == ("c", "", [])
    assert other["op"].colocation_groups() == ["loc:@c"]  # not the anchor's group
    assert not other["ctl"].control_inputs
    assert mine.name == "scoped/c" and [c.name for c in mine.control_inputs] == ["scoped/first"]
    assert mine.colocation_groups() == ["loc:@scoped/anchor"]
