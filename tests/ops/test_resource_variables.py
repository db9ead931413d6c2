"""Resource variables: TF's op types and attrs, reads and writes, scatters, errors,
the switches that make them, and GraphDef round trips, against NumPy values."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors

pytestmark = pytest.mark.timeout(60)

INIT = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)


@pytest.fixture(autouse=True)
def ref_variables_by_default():
    """Each test starts with the process default off and leaves it so."""
    tf.disable_resource_variables()
    yield
    tf.disable_resource_variables()


def _var(value=INIT, name="v", **kwargs):
    return tf.Variable(value, name=name, use_resource=True, **kwargs)


# -- what it is made of ------------------------------------------------------------------
def test_ops_and_attrs_are_tfs():
    v = _var()
    handle = v.handle
    assert v.op is handle.op and handle.op.type == "VarHandleOp"
    assert handle.dtype == tf.resource and handle.shape.as_list() == []
    assert handle.op.get_attr("dtype") == tf.float32
    assert handle.op.get_attr("shape").as_list() == [3, 2]
    assert handle.op.get_attr("shared_name") == "v" and handle.op.get_attr("container") == ""
    assert v.name == "v:0" and v.dtype == tf.float32 and v.shape.as_list() == [3, 2]
    assert v.initializer.type == "AssignVariableOp" and v.initializer.name == "v/Assign"
    assert v.initializer.inputs[0] is handle
    assert v.value().op.type == "ReadVariableOp" and v.value().name == "v/Read/ReadVariableOp:0"
    assert v.value().op.get_attr("dtype") == tf.float32
    assert v.initial_value.name.startswith("v/Initializer/")
    # Every use as a tensor is a read of its own, made where it is used.
    assert (v + 1.0).op.inputs[0].op.type == "ReadVariableOp"
    assert (v + 1.0).op.inputs[0] is not v.value()
    assert isinstance(v, tf.Variable)
    assert v in tf.global_variables() and v in tf.trainable_variables()


def test_switches_choose_the_kind():
    assert not tf.resource_variables_enabled()
    assert tf.Variable(1.0).op.type == "VariableV2"
    assert tf.Variable(1.0, use_resource=True).op.type == "VarHandleOp"
    tf.enable_resource_variables()
    assert tf.resource_variables_enabled() and tf.compat.v1.resource_variables_enabled()
    assert tf.Variable(1.0).op.type == "VarHandleOp"
    assert tf.Variable(1.0, use_resource=False).op.type == "VariableV2"
    assert tf.get_variable("g", shape=[2]).op.type == "VarHandleOp"
    assert tf.train.get_or_create_global_step().op.type == "VarHandleOp"
    tf.compat.v1.disable_resource_variables()
    assert tf.Variable(1.0).op.type == "VariableV2"


def test_get_variable_and_variable_scope_use_resource():
    a = tf.get_variable("a", shape=[2], use_resource=True)
    with tf.variable_scope("outer", use_resource=True):
        b = tf.get_variable("b", shape=[2])
        with tf.variable_scope("inner"):
            c = tf.get_variable("c", shape=[2])  # inherited
        with tf.variable_scope("ref", use_resource=False):
            d = tf.get_variable("d", shape=[2])
        e = tf.get_variable("e", shape=[2], use_resource=False)
    assert [x.op.type for x in (a, b, c, d, e)] == \
        ["VarHandleOp"] * 3 + ["VariableV2"] * 2
    assert c.op.name == "outer/inner/c" and c.handle.op.get_attr("shared_name") == \
        "outer/inner/c"
    with tf.variable_scope("outer", reuse=True):
        assert tf.get_variable("b") is b
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(b).shape == (2,)


# -- reads and writes --------------------------------------------------------------------
def test_read_assign_and_updates_with_and_without_read_value():
    v = _var()
    delta = np.full((3, 2), 0.5, np.float32)
    assigned = v.assign(INIT * 2)
    added = v.assign_add(delta)
    subbed = v.assign_sub(delta, read_value=False)
    assert assigned.op.type == "ReadVariableOp"  # the value after the write
    assert added.op.control_inputs[0].type == "AssignAddVariableOp"
    assert subbed.type == "AssignSubVariableOp" and not subbed.outputs
    functional = tf.assign_add(v, delta)
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), INIT)
        np.testing.assert_array_equal(sess.run(v.read_value()), INIT)
        np.testing.assert_array_equal(sess.run(assigned), INIT * 2)
        np.testing.assert_array_equal(sess.run(added), INIT * 2 + 0.5)
        assert sess.run(subbed) is None
        np.testing.assert_array_equal(sess.run(v), INIT * 2)
        np.testing.assert_array_equal(sess.run(functional), INIT * 2 + 0.5)
        v.load(INIT * 3, sess)
        np.testing.assert_array_equal(v.eval(sess), INIT * 3)


def test_a_read_after_an_assign_in_program_order_sees_it():
    v = _var(np.float32(1.0))
    write = v.assign(5.0, read_value=False)
    with tf.control_dependencies([write]):
        after = v * 2.0  # a fresh read, after the write
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(after) == 10.0


def test_operators_read_the_value():
    v = _var()
    with tf.Session() as sess:
        sess.run(v.initializer)
        out = sess.run([v + 1.0, 2.0 * v, -v, v[1], v @ np.eye(2, dtype=np.float32),
                        v > 2.0])
    np.testing.assert_array_equal(out[0], INIT + 1)
    np.testing.assert_array_equal(out[1], 2 * INIT)
    np.testing.assert_array_equal(out[2], -INIT)
    np.testing.assert_array_equal(out[3], INIT[1])
    np.testing.assert_array_equal(out[4], INIT)
    np.testing.assert_array_equal(out[5], INIT > 2)


def test_is_initialized_and_report_uninitialized():
    v = _var()
    _var(name="w")
    report = tf.report_uninitialized_variables()
    ready = tf.is_variable_initialized(v)
    assert ready.op.type == "VarIsInitializedOp"
    with tf.Session() as sess:
        assert not sess.run(ready)
        assert sorted(sess.run(report).tolist()) == [b"v", b"w"]
        sess.run(v.initializer)
        assert sess.run(ready) and sess.run(report).tolist() == [b"w"]


def test_sparse_read_is_a_resource_gather():
    v = _var()
    rows = v.sparse_read([2, 0, 2])
    assert rows.op.type == "ResourceGather" and rows.shape.as_list() == [3, 2]
    assert rows.op.get_attr("Tindices") == tf.int32
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(rows), INIT[[2, 0, 2]])
        with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1\] = 7 is not in "
                                                              r"\[0, 3\)"):
            sess.run(v.sparse_read([0, 7]))


@pytest.mark.parametrize("method,op_type,ufunc", [
    ("scatter_update", "ResourceScatterUpdate", None),
    ("scatter_add", "ResourceScatterAdd", np.add),
    ("scatter_sub", "ResourceScatterSub", np.subtract),
    ("scatter_mul", "ResourceScatterMul", np.multiply),
    ("scatter_div", "ResourceScatterDiv", np.divide),
    ("scatter_min", "ResourceScatterMin", np.minimum),
    ("scatter_max", "ResourceScatterMax", np.maximum),
])
def test_scatters_match_numpy(method, op_type, ufunc):
    v = _var()
    indices = np.array([2, 0, 2], np.int32)
    updates = np.array([[0.5, 4.0], [2.0, 1.0], [3.0, 9.0]], np.float32)
    out = getattr(v, method)(tf.IndexedSlices(tf.constant(updates), tf.constant(indices)))
    assert out.op.control_inputs[0].type == op_type
    expected = INIT.copy()
    if ufunc is None:
        expected[indices] = updates  # the last write of a repeated row wins
    else:
        ufunc.at(expected, indices, updates)
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(out), expected)


def test_integer_scatter_div_truncates_toward_zero_like_tf():
    v = _var(np.array([7, -7, 9], np.int32), name="ints")
    out = v.scatter_div(tf.IndexedSlices(tf.constant([2, 2, 3], tf.int32),
                                         tf.constant([0, 1, 0])))
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(out), [1, -3, 9])  # 7/2=3, 3/3=1; -7/2=-3


def test_functional_scatters_take_resource_variables():
    v = _var()
    out = tf.scatter_add(v, [1], [[10.0, 20.0]])
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(out), INIT + [[0, 0], [10, 20], [0, 0]])


def test_count_up_to():
    n = _var(np.int64(0), name="n")
    step = n.count_up_to(2)
    assert step.op.type == "ResourceCountUpTo"
    with tf.Session() as sess:
        sess.run(n.initializer)
        assert [sess.run(step), sess.run(step)] == [0, 1]
        with pytest.raises(errors.OutOfRangeError):
            sess.run(step)


def test_destroy_resource_op_drops_the_value():
    from nbcluster.ops.resource_variables import destroy_resource_op
    v = _var()
    destroy = destroy_resource_op(v.handle)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(destroy)
        assert not sess.run(v.is_initialized())


def test_state_lives_on_the_server_across_sessions(server):
    v = _var(name="shared_rv")
    with tf.Session(server.target) as sess:
        sess.run(v.initializer)
        sess.run(v.assign_add(INIT))
    with tf.Session(server.target) as sess:
        np.testing.assert_array_equal(sess.run(v), 2 * INIT)


# -- errors ------------------------------------------------------------------------------
def test_reading_an_uninitialized_variable_is_failed_precondition():
    v = _var(name="lonely")
    with tf.Session() as sess:
        for fetch in (v, v + 1.0, v.sparse_read([0]), v.assign_add(INIT)):
            with pytest.raises(errors.FailedPreconditionError,
                               match=r"resource variable lonely.*uninitialized"):
                sess.run(fetch)


def test_wrong_dtype_or_shape_at_build_time():
    v = _var()
    with pytest.raises(ValueError, match="Shape mismatch"):
        v.assign(np.zeros((2, 2), np.float32))
    with pytest.raises((TypeError, ValueError)):
        v.assign(tf.constant([1, 2], tf.int32))


def test_wrong_shape_or_dtype_at_run_time_is_invalid_argument():
    v = _var()
    fed = tf.placeholder(tf.float32, None)
    assign = v.assign(fed, read_value=False)
    from nbcluster.ops import resource_variables as rv
    # A second handle to the same variable, declared float64: only the run can tell.
    alias = rv.var_handle_op(tf.float64, [3, 2], shared_name="v", name="alias")
    with pytest.raises(TypeError, match="float32 variable 'v' as dtype float64"):
        rv.assign_variable_op(v.handle, tf.placeholder(tf.float64, None))
    wrong_dtype = rv.assign_variable_op(alias, tf.placeholder(tf.float64, None))
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"wrong shape. Expected \[3, 2\] got \[2\]"):
            sess.run(assign, {fed: [1.0, 2.0]})
        with pytest.raises(errors.InvalidArgumentError, match="wrong dtype"):
            sess.run(wrong_dtype, {wrong_dtype.inputs[1]: INIT.astype(np.float64)})
        np.testing.assert_array_equal(sess.run(v), INIT)  # nothing was written


def test_handle_ops_refuse_a_non_resource_input():
    with pytest.raises(TypeError, match="resource"):
        tf.get_default_graph().create_op("ReadVariableOp", [tf.constant(1.0)],
                                         {"dtype": tf.float32})


# -- GraphDefs ---------------------------------------------------------------------------
def test_graph_def_round_trip_runs_the_same():
    v = _var()
    w = _var(np.float32(2.0), name="w")
    rows = v.sparse_read([1, 1])
    after = v.scatter_add(tf.IndexedSlices(tf.constant([[1.0, 1.0]]), tf.constant([0])))
    loss = tf.reduce_sum(rows) * w
    gv = tf.train.AdamOptimizer(0.1).minimize(loss)
    init = tf.global_variables_initializer()
    graph_def = tf.get_default_graph().as_graph_def()
    types = {n.op for n in graph_def.node}
    assert {"VarHandleOp", "ReadVariableOp", "AssignVariableOp", "VarIsInitializedOp",
            "ResourceGather", "ResourceScatterAdd", "ResourceApplyAdam"} <= types
    names = [init.name, gv.name, after.name, v.value().name, w.value().name]
    with tf.Session() as sess:
        sess.run(init)
        sess.run(gv)
        expected = sess.run(names[2:])
    with tf.Graph().as_default() as imported:
        tf.import_graph_def(graph_def, name="")
        handle = imported.get_operation_by_name("v")
        assert handle.type == "VarHandleOp" and handle.get_attr("shape").as_list() == [3, 2]
        with tf.Session() as sess:
            sess.run(names[0])
            sess.run(names[1])
            for got, want in zip(sess.run(names[2:]), expected):
                np.testing.assert_allclose(got, want, rtol=1e-6)


# -- TF2-style code ----------------------------------------------------------------------
def test_variables_made_in_a_tf_function_are_resource_variables_and_ordered():
    made = []

    @tf.function
    def step(x):
        if not made:
            made.append(tf.Variable(np.float32(1.0), name="counter"))
        v = made[0]
        v.assign_add(x, read_value=False)
        return v * 10.0  # after the write, by the function's automatic ordering

    first, second = step(np.float32(2.0)), step(np.float32(3.0))
    (v,) = made
    assert v.op.type == "VarHandleOp" and not tf.resource_variables_enabled()
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(first) == 30.0
        assert sess.run(second) == 60.0
        assert sess.run(v) == 6.0


# -- placement ---------------------------------------------------------------------------
def test_whatever_consumes_a_handle_is_placed_with_it():
    from nbcluster.kernels import load_all
    from nbcluster.master_worker.placement import place
    from nbcluster.ops import resource_variables as rv
    from nbcluster.runtime.kernel_table import has_kernel
    load_all()
    devices = ["/job:w/replica:0/task:0/device:CPU:0", "/job:ps/replica:0/task:0/device:CPU:0"]
    with tf.device("/job:ps/task:0"):
        v = _var()
    passed_on = tf.identity(v.handle, name="passed_on")  # no resource op, no colocation
    read = rv.read_variable_op(passed_on, tf.float32, name="read_through")
    rows = rv.resource_gather(tf.identity(passed_on, name="again"), tf.constant([0]),
                              tf.float32, name="rows")
    doubled = tf.multiply(read, 2.0, name="doubled")
    del rows, doubled
    nodes = {op.name: op.to_node() for op in tf.get_default_graph().get_operations()}
    placement = place(nodes, devices, ("w", 0), False, has_kernel)
    for name in ("v", "passed_on", "read_through", "again", "rows", "v/Read/ReadVariableOp"):
        assert placement[name] == devices[1], name
    assert placement["doubled"] == devices[0]  # the value, not the handle, travels
