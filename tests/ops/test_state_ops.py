"""Variables: creation, initialization, updates, collections and where state lives."""
import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)


# -- construction --------------------------------------------------------------------
def test_variable_names_and_parts():
    v = tf.Variable([1.0, 2.0], name="v")
    assert v.name == "v:0" and v.op.name == "v" and v.op.type == "VariableV2"
    assert v.dtype.base_dtype == tf.float32 and v.shape.as_list() == [2]
    assert v.get_shape() == v.shape
    assert v.initializer.name == "v/Assign" and v.initializer.type == "Assign"
    assert v.initial_value.name == "v/initial_value:0"
    assert v.value().name == "v/read:0" and v.value().op.type == "Identity"
    assert v.graph is tf.get_default_graph()
    assert repr(v).startswith("<tf.Variable 'v:0'")


def test_variable_name_uniquing():
    names = [tf.Variable(0.0, name="v").name for _ in range(3)]
    assert names == ["v:0", "v_1:0", "v_2:0"]
    assert tf.Variable(0.0).name == "Variable:0"
    assert tf.Variable(0.0).name == "Variable_1:0"
    with tf.name_scope("layer"):
        assert tf.Variable(0.0, name="w").name == "layer/w:0"


def test_initial_value_needed():
    with pytest.raises(ValueError):
        tf.Variable()


def test_callable_initial_value_and_dtype():
    v = tf.Variable(lambda: tf.constant([1, 2, 3]), name="v")
    w = tf.Variable(lambda: [1.0, 2.0], name="w", dtype=tf.float64)
    assert v.dtype.base_dtype == tf.int32 and w.dtype.base_dtype == tf.float64
    assert v.initial_value.op.name.startswith("v/Initializer/")
    with tf.Session() as sess:
        sess.run([v.initializer, w.initializer])
        np.testing.assert_array_equal(sess.run(v), [1, 2, 3])
        assert sess.run(w).dtype == np.float64


def test_initial_value_from_another_tensor():
    x = tf.constant(3.0)
    v = tf.Variable(x * 2.0, name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(v) == 6.0
        assert sess.run(v.initial_value) == 6.0


def test_variable_created_in_control_block_has_no_control_inputs():
    c = tf.constant(1.0)
    with tf.control_dependencies([c]):
        v = tf.Variable(0.0, name="v")
    assert v.op.control_inputs == [] and v.initializer.control_inputs == []


# -- reads and updates ---------------------------------------------------------------
def test_read_value_and_value():
    v = tf.Variable(5.0, name="v")
    r = v.read_value()
    assert r.op.type == "Identity" and r is not v.value()
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(r) == 5.0 and sess.run(v.value()) == 5.0 and sess.run(v) == 5.0


def test_assign_methods():
    v = tf.Variable([1.0, 2.0], name="v")
    a = v.assign([10.0, 20.0])
    add = v.assign_add([1.0, 1.0])
    sub = v.assign_sub([5.0, 5.0])
    assert a.op.type == "Assign" and add.op.type == "AssignAdd" and sub.op.type == "AssignSub"
    assert isinstance(v.assign([0.0, 0.0], read_value=False), tf.Operation)
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(a), [10.0, 20.0])
        np.testing.assert_array_equal(sess.run(add), [11.0, 21.0])
        np.testing.assert_array_equal(sess.run(sub), [6.0, 16.0])
        np.testing.assert_array_equal(sess.run(v), [6.0, 16.0])


def test_module_level_assign_functions():
    v = tf.Variable(1, name="v")
    a = tf.assign(v, 7, name="set")
    assert a.op.name == "set"
    add = tf.assign_add(v, 3)
    sub = tf.assign_sub(v, 2)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(a) == 7 and sess.run(add) == 10 and sess.run(sub) == 8
        # The ref "v:0" works as well as the Variable object.
        ref = tf.get_default_graph().get_tensor_by_name("v:0")
        assert sess.run(tf.assign_add(ref, 2)) == 10


def test_assign_checks_shape_and_dtype_when_built():
    v = tf.Variable([1.0, 2.0], name="v")
    with pytest.raises(ValueError):
        v.assign([1.0, 2.0, 3.0])
    with pytest.raises((TypeError, ValueError)):
        v.assign(tf.constant([1, 2]))


def test_validate_shape_false_allows_a_new_shape():
    v = tf.Variable([1.0, 2.0], name="v", validate_shape=False)
    assert v.shape.rank is None
    grow = tf.assign(v, [1.0, 2.0, 3.0], validate_shape=False)
    w = tf.Variable([1.0], name="w")
    w_grow = tf.assign(w, [4.0, 5.0], validate_shape=False)
    with tf.Session() as sess:
        sess.run([v.initializer, w.initializer])
        np.testing.assert_array_equal(sess.run(grow), [1.0, 2.0, 3.0])
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])
        np.testing.assert_array_equal(sess.run(w_grow), [4.0, 5.0])


def test_ref_name_is_fetchable_and_usable():
    v = tf.Variable(3.0, name="v")
    g = tf.get_default_graph()
    doubled = g.get_tensor_by_name("v:0") * 2.0
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run("v:0") == 3.0
        assert sess.run(doubled) == 6.0
        assert sess.run(v + 1.0) == 4.0


def test_variable_in_arithmetic_and_eval():
    v = tf.Variable([[1.0, 2.0]], name="v")
    m = tf.matmul(v, tf.constant([[1.0], [1.0]]))
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(m)[0, 0] == 3.0
        np.testing.assert_array_equal(v.eval(), [[1.0, 2.0]])
        v.load([[5.0, 6.0]])
        np.testing.assert_array_equal(sess.run(v), [[5.0, 6.0]])


# -- collections and initializers --------------------------------------------------------
def test_collections():
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b", trainable=False)
    with tf.name_scope("scope"):
        c = tf.Variable(3.0, name="c")
    assert tf.global_variables() == [a, b, c]
    assert tf.trainable_variables() == [a, c]
    assert tf.global_variables("scope") == [c]
    assert not b.trainable and a.trainable
    assert tf.get_collection("variables") == [a, b, c]
    d = tf.Variable(4.0, name="d", collections=["mine"])
    assert d not in tf.global_variables() and tf.get_collection("mine") == [d]
    with tf.Graph().as_default():
        assert tf.global_variables() == []


def test_initializers():
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b")
    init_a = tf.variables_initializer([a])
    assert init_a.name == "init" and init_a.type == "NoOp"
    init_all = tf.global_variables_initializer()
    assert {op.name for op in init_all.control_inputs} == {"a/Assign", "b/Assign"}
    assert tf.variables_initializer([]).type == "NoOp"
    assert tf.initialize_all_variables is tf.global_variables_initializer
    with tf.Session() as sess:
        sess.run(init_a)
        assert sess.run(tf.is_variable_initialized(a))
        assert not sess.run(tf.is_variable_initialized(b))
        sess.run(init_all)
        assert sess.run([a, b]) == [1.0, 2.0]
        assert sess.run(tf.is_variable_initialized(b))


def test_is_variable_initialized_is_a_bool_scalar():
    v = tf.Variable(1.0, name="v")
    t = tf.is_variable_initialized(v)
    assert t.dtype == tf.bool and t.shape.rank == 0


def test_uninitialized_read_fails_precondition():
    v = tf.Variable(1.0, name="my_var")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="my_var"):
            sess.run(v)
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized"):
            sess.run(v + 1.0)
        with pytest.raises(tf.errors.FailedPreconditionError, match="my_var"):
            sess.run(v.assign_add(1.0))


# -- where the state lives ---------------------------------------------------------------
def test_state_is_private_per_in_process_session():
    v = tf.Variable(1.0, name="v")
    inc = v.assign_add(1.0)
    with tf.Session() as s1, tf.Session() as s2:
        s1.run(v.initializer)
        s1.run(inc)
        assert s1.run(v) == 2.0
        with pytest.raises(tf.errors.FailedPreconditionError):
            s2.run(v)


def test_state_is_shared_by_sessions_on_one_server(server):
    v = tf.Variable(1.0, name="shared_v")
    inc = v.assign_add(1.0)
    with tf.Session(server.target) as s1, tf.Session(server.target) as s2:
        s1.run(v.initializer)
        s1.run(inc)
        assert s2.run(v) == 2.0
        s2.run(inc)
        assert s1.run(v) == 3.0


def test_state_is_shared_by_graphs_naming_the_same_variable(server):
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        v1 = tf.Variable(10.0, name="cross_graph_v")
    with g2.as_default():
        v2 = tf.Variable(0.0, name="cross_graph_v")
        inc = v2.assign_add(5.0)
    with tf.Session(server.target, graph=g1) as s1, \
            tf.Session(server.target, graph=g2) as s2:
        s1.run(v1.initializer)
        assert s2.run(v2) == 10.0
        s2.run(inc)
        assert s1.run(v1) == 15.0


def test_container_separates_state_on_one_server(server):
    with tf.container("c1"):
        v = tf.Variable(1.0, name="contained_v")
    with tf.Graph().as_default() as g2:
        w = tf.Variable(2.0, name="contained_v")
    with tf.Session(server.target) as s1, tf.Session(server.target, graph=g2) as s2:
        s1.run(v.initializer)
        s2.run(w.initializer)
        assert s1.run(v) == 1.0 and s2.run(w) == 2.0


# -- scatter updates -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_scatter_update_add_sub_match_numpy(dtype):
    start = np.arange(12, dtype=dtype).reshape(4, 3)
    v = tf.Variable(start, name="table")
    idx = np.array([3, 1, 3], np.int32)
    rows = np.ones((3, 3), dtype) * np.array([[1], [2], [3]], dtype)
    add, sub = tf.scatter_add(v, idx, rows), tf.scatter_sub(v, idx, rows)
    update = tf.scatter_update(v, [0, 2], np.full((2, 3), 7, dtype))
    assert add.op.type == "ScatterAdd" and add.shape.as_list() == [4, 3]
    assert update.op.get_attr("use_locking") is True
    with tf.Session() as sess:
        sess.run(v.initializer)
        expected = start.copy()
        np.add.at(expected, idx, rows)  # repeated indices add up
        np.testing.assert_array_equal(sess.run(add), expected)
        np.testing.assert_array_equal(sess.run(sub), start)
        expected = start.copy()
        expected[[0, 2]] = 7
        np.testing.assert_array_equal(sess.run(update), expected)
        np.testing.assert_array_equal(sess.run(v), expected)


def test_scatter_scalar_updates_multi_dim_indices_and_empty():
    v = tf.Variable(np.zeros((3, 2)), name="grid")
    idx = tf.placeholder(tf.int64, None)
    add = tf.scatter_add(v, idx, 1.5)
    with tf.Session() as sess:
        sess.run(v.initializer)
        got = sess.run(add, {idx: [[0, 2], [2, 2]]})
        np.testing.assert_array_equal(got, [[1.5, 1.5], [0, 0], [4.5, 4.5]])
        unchanged = sess.run(add, {idx: np.zeros([0], np.int64)})
        np.testing.assert_array_equal(unchanged, got)


def test_scatter_errors_name_the_index():
    from nbcluster import errors
    v = tf.Variable(np.zeros((5, 2), np.float32), name="errs")
    idx = tf.placeholder(tf.int32, [None])
    upd = tf.placeholder(tf.float32, None)
    op = tf.scatter_update(v, idx, upd)
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1\] = 7 is not in "
                                                              r"\[0, 5\)"):
            sess.run(op, {idx: [0, 7], upd: np.zeros((2, 2))})
        with pytest.raises(errors.InvalidArgumentError, match="Must have updates.shape = "
                                                              "indices.shape"):
            sess.run(op, {idx: [0, 1], upd: np.zeros((2, 3))})
        np.testing.assert_array_equal(sess.run(v), np.zeros((5, 2)))
    with pytest.raises(ValueError, match="incompatible"):
        tf.scatter_add(v, [0, 1], np.zeros((2, 3), np.float32))
    with pytest.raises(TypeError, match="'indices' has DataType float32"):
        tf.scatter_add(v, tf.constant([0.0]), np.zeros((1, 2), np.float32))
    with pytest.raises(TypeError, match="requires that input 'ref' be a mutable tensor"):
        tf.scatter_sub(v.value(), [0], np.zeros((1, 2), np.float32))
    with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized"):
        w = tf.Variable(np.zeros(2), name="never_initialized")
        with tf.Session() as sess:
            sess.run(tf.scatter_add(w, [0], [1.0]))


def test_scatter_on_a_ps_variable_over_grpc():
    import socket

    def free_port():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{free_port()}"],
                                 "worker": [f"127.0.0.1:{free_port()}"]})
    ps = tf.train.Server(spec, job_name="ps", task_index=0)
    worker = tf.train.Server(spec, job_name="worker", task_index=0)
    try:
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.zeros((4, 2), np.float32), name="ps_table")
        with tf.device("/job:worker/task:0"):
            idx = tf.placeholder(tf.int32, [None])
            rows = tf.placeholder(tf.float32, [None, 2])
            computed = rows * 2.0
        add = tf.scatter_add(v, idx, computed)
        update = tf.scatter_update(v, idx, rows)
        assert add.op.device == v.op.device  # the update runs where the variable lives
        with tf.Session(worker.target) as sess:
            sess.run(v.initializer)
            sess.run(add, {idx: [1, 1, 3], rows: np.ones((3, 2), np.float32)})
            sess.run(update.op, {idx: [0], rows: [[5.0, 6.0]]})
            np.testing.assert_array_equal(sess.run(v), [[5, 6], [4, 4], [0, 0], [2, 2]])
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[0\] = 9"):
                sess.run(add, {idx: [9], rows: np.ones((1, 2), np.float32)})
        with tf.Session(ps.target) as other:  # the state lives on the ps task
            np.testing.assert_array_equal(other.run(v)[1], [4, 4])
    finally:
        worker.stop()
        ps.stop()


def test_report_uninitialized_variables_names_those_not_yet_initialized():
    a = tf.Variable(1.0, name="a")
    b = tf.get_variable("b", [2])
    loc = tf.Variable(0, name="loc", collections=[tf.GraphKeys.LOCAL_VARIABLES])
    report = tf.report_uninitialized_variables()
    only_b = tf.report_uninitialized_variables([b])
    with tf.Session() as sess:
        assert sess.run(report).tolist() == [b"a", b"b", b"loc"]
        sess.run(a.initializer)
        assert sess.run(report).tolist() == [b"b", b"loc"]
        sess.run([b.initializer, loc.initializer])
        assert sess.run(report).tolist() == [] and sess.run(only_b).tolist() == []
    with tf.Graph().as_default():
        assert tf.report_uninitialized_variables().shape.as_list() == [0]


def test_variable_scatter_methods_take_indexed_slices():
    v = tf.Variable(np.zeros((4, 2), np.float32))
    rows = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([3, 0]))
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(v.scatter_add(rows))
        sess.run(v.scatter_sub(tf.IndexedSlices(tf.constant([[1.0, 1.0]]), tf.constant([3]))))
        out = sess.run(v.scatter_update(tf.IndexedSlices(tf.constant([[9.0, 9.0]]),
                                                         tf.constant([1]))))
    np.testing.assert_array_equal(out, [[3, 4], [9, 9], [0, 0], [0, 1]])
    with pytest.raises(TypeError, match="sparse_delta is not IndexedSlices"):
        v.scatter_add([[1.0, 2.0]])
