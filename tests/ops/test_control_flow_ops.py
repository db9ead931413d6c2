"""tf.cond, tf.case, tf.while_loop and tf.TensorArray against NumPy values,
their bad input at build time, and their GraphDefs round-tripping."""
import collections

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors


def run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


# -- cond ----------------------------------------------------------------------
def test_cond_picks_a_branch_and_runs_only_its_side_effects():
    x = tf.placeholder(tf.float32, [])
    hits_t, hits_f = tf.Variable(0.0), tf.Variable(0.0)

    def true_fn():
        with tf.control_dependencies([tf.assign_add(hits_t, 1.0)]):
            return x * 2.0

    def false_fn():
        with tf.control_dependencies([tf.assign_add(hits_f, 1.0)]):
            return x - 1.0
    y = tf.cond(x > 0, true_fn, false_fn)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(y, {x: 3.0}) == 6.0
        assert sess.run(y, {x: -3.0}) == -4.0
        assert sess.run(y, {x: 5.0}) == 10.0
        assert sess.run([hits_t, hits_f]) == [2.0, 1.0]


def test_cond_uses_tf_op_types_and_merges_nested_structures():
    x = tf.constant(np.array([1.0, 2.0], np.float32))
    Pair = collections.namedtuple("Pair", "a b")
    out = tf.cond(tf.constant(False), lambda: {"p": Pair(x, x * 2), "q": [x]},
                  lambda: {"p": Pair(x + 1, x * 3), "q": [x - 1]})
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"Switch", "Merge"} <= types
    got = run(out)
    np.testing.assert_allclose(got["p"].a, [2, 3])
    np.testing.assert_allclose(got["p"].b, [3, 6])
    np.testing.assert_allclose(got["q"][0], [0, 1])


def test_cond_strict_keeps_one_element_lists():
    x = tf.constant(1.0)
    assert isinstance(tf.cond(tf.constant(True), lambda: [x], lambda: [x + 1]), tf.Tensor)
    strict = tf.cond(tf.constant(True), lambda: [x], lambda: [x + 1], strict=True)
    assert isinstance(strict, list) and run(strict) == [1.0]


def test_nested_cond_runs_only_the_taken_leaf():
    x = tf.placeholder(tf.int32, [])
    y = tf.cond(x > 0, lambda: tf.cond(x > 10, lambda: x * 100, lambda: x * 10),
                lambda: -x)
    with tf.Session() as sess:
        assert [sess.run(y, {x: v}) for v in (20, 5, -3)] == [2000, 50, 3]


def test_cond_branches_of_different_structures_fail_at_build_time():
    x = tf.constant(1.0)
    with pytest.raises(ValueError, match="Incompatible return values of true_fn and false_fn"):
        tf.cond(tf.constant(True), lambda: [x, x], lambda: [x])
    with pytest.raises(TypeError, match="Incompatible return types"):
        tf.cond(tf.constant(True), lambda: [x], lambda: (x,), strict=True)
    with pytest.raises(ValueError, match="same type: float32 .*int32"):
        tf.cond(tf.constant(True), lambda: x, lambda: tf.constant(1))
    with pytest.raises(ValueError, match="true_fn must have a return value"):
        tf.cond(tf.constant(True), lambda: None, lambda: x)
    with pytest.raises(TypeError, match="false_fn must be callable"):
        tf.cond(tf.constant(True), lambda: x, x)
    with pytest.raises(TypeError, match="pred must not be a Python bool"):
        tf.cond(True, lambda: x, lambda: x)


def test_fetching_an_untaken_branch_tensor_is_an_invalid_argument():
    x = tf.placeholder(tf.float32, [])
    inside = []

    def true_fn():
        inside.append(x * 7.0)
        return inside[0]
    tf.cond(x > 0, true_fn, lambda: x)
    with tf.Session() as sess:
        assert sess.run(inside[0], {x: 1.0}) == 7.0
        with pytest.raises(errors.InvalidArgumentError, match="dead"):
            sess.run(inside[0], {x: -1.0})


# -- case ----------------------------------------------------------------------
def test_case_takes_the_first_true_pair_else_default():
    x = tf.placeholder(tf.int32, [])
    y = tf.case([(x < 0, lambda: tf.constant(-1)), (x < 10, lambda: tf.constant(1))],
                default=lambda: tf.constant(100))
    with tf.Session() as sess:
        assert [sess.run(y, {x: v}) for v in (-5, 5, 50)] == [-1, 1, 100]


def test_case_exclusive_fails_the_step_when_two_preds_hold():
    x = tf.placeholder(tf.int32, [])
    y = tf.case({x < 5: lambda: tf.constant(1), x < 10: lambda: tf.constant(2)},
                default=lambda: tf.constant(3), exclusive=True)
    with tf.Session() as sess:
        assert sess.run(y, {x: 7}) == 2
        assert sess.run(y, {x: 70}) == 3
        with pytest.raises(errors.InvalidArgumentError, match="exclusive=True"):
            sess.run(y, {x: 1})


# -- while_loop ----------------------------------------------------------------
def test_while_loop_matches_a_python_loop():
    n = tf.placeholder(tf.int32, [])
    w = tf.constant(np.array([0.5, 2.0], np.float32))
    i, acc = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * w + 1.0),
                           [tf.constant(0), tf.ones([2])])
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"Enter", "Merge", "Switch", "LoopCond", "NextIteration", "Exit"} <= types
    with tf.Session() as sess:
        for steps in (0, 1, 6):
            expect = np.ones(2, np.float32)
            for _ in range(steps):
                expect = expect * np.array([0.5, 2.0], np.float32) + 1.0
            got_i, got = sess.run([i, acc], {n: steps})
            assert got_i == steps
            np.testing.assert_allclose(got, expect, rtol=1e-6)


def test_nested_while_loops_and_cond_inside_a_loop():
    n = tf.placeholder(tf.int32, [])

    def outer(i, s):
        _, s = tf.while_loop(lambda j, t: j < i, lambda j, t: (j + 1, t + j), [0, s])
        return i + 1, s
    _, total = tf.while_loop(lambda i, s: i < n, outer, [0, 0])
    _, evens = tf.while_loop(lambda i, s: i < n,
                             lambda i, s: (i + 1, tf.cond(tf.equal(i % 2, 0),
                                                          lambda: s + i, lambda: s)), [0, 0])
    with tf.Session() as sess:
        got = sess.run([total, evens], {n: 6})
    assert got == [sum(j for i in range(6) for j in range(i)), sum(range(0, 6, 2))]


def test_while_loop_nested_loop_vars_and_maximum_iterations():
    state = {"count": tf.constant(0), "pair": (tf.constant(1.0), tf.constant(2.0))}
    out = tf.while_loop(lambda s: s["count"] < 100,
                        lambda s: {"count": s["count"] + 1,
                                   "pair": (s["pair"][1], s["pair"][0] + s["pair"][1])},
                        [state], maximum_iterations=5)
    got = run(out)[0]  # TF1 returns the loop_vars' structure: a one-element list here
    assert got["count"] == 5
    a, b = 1.0, 2.0
    for _ in range(5):
        a, b = b, a + b
    assert got["pair"] == (a, b)


def test_while_loop_side_effects_run_once_per_iteration():
    v = tf.Variable(0)

    def body(i):
        with tf.control_dependencies([tf.assign_add(v, 10)]):
            return i + 1
    out = tf.while_loop(lambda i: i < 4, body, [0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(out) == 4
        assert sess.run(v) == 40


@pytest.mark.parametrize("parallel", [1, 2, 10])
def test_parallel_iterations_give_the_same_values(parallel):
    xs = np.arange(20, dtype=np.float32)
    data = tf.constant(xs)
    _, total = tf.while_loop(lambda i, s: i < 20,
                             lambda i, s: (i + 1, s + tf.gather(data, i) ** 2),
                             [0, tf.constant(0.0)], parallel_iterations=parallel)
    assert run(total) == pytest.approx(float(np.sum(xs ** 2)))


def test_parallel_iterations_bound_the_iterations_in_flight():
    from nbcluster.runtime import control_flow_executor as cfe
    seen = []
    original = cfe._Run._new_iteration

    def spy(self, frame, index):
        it = original(self, frame, index)
        if frame.parent is not None:
            seen.append(len(frame.iters))
        return it
    cfe._Run._new_iteration = spy
    try:
        # Loop variables that do not depend on each other let iterations overlap.
        out = tf.while_loop(lambda i, a, b: i < 30, lambda i, a, b: (i + 1, a + 1, b * 1),
                            [0, 0, 1], parallel_iterations=3)
        assert run(out) == [30, 30, 1]
    finally:
        cfe._Run._new_iteration = original
    assert seen and max(seen) <= 3


def test_shape_changing_body_without_invariant_is_a_value_error_naming_the_tensor():
    x = tf.ones([1], name="grow")
    with pytest.raises(ValueError, match=r"'grow:0' enters the loop with shape \(1,\), but "
                                         r"has shape \(2,\) after one iteration"):
        tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, tf.concat([x, x], 0)), [0, x])


def test_shape_invariants_let_a_shape_grow():
    x = tf.ones([1])
    _, out = tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, tf.concat([x, x], 0)),
                           [0, x], shape_invariants=[tf.TensorShape([]),
                                                     tf.TensorShape([None])])
    assert out.shape.as_list() == [None]
    np.testing.assert_allclose(run(out), np.ones(8))


def test_while_loop_bad_bodies_fail_at_build_time():
    with pytest.raises(ValueError, match="same nested structure"):
        tf.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,), [0, 0])
    with pytest.raises(TypeError, match="enters the loop as int32 but the body returns float32"):
        tf.while_loop(lambda i: i < 3, lambda i: tf.constant(1.0), [0])
    with pytest.raises(TypeError, match="body must be callable"):
        tf.while_loop(lambda i: i < 3, None, [0])


# -- TensorArray ---------------------------------------------------------------
def test_tensor_array_in_a_loop_writes_reads_and_stacks():
    x = tf.placeholder(tf.float32, [None, 3])
    n = tf.shape(x)[0]
    inputs = tf.TensorArray(tf.float32, size=n).unstack(x)

    def body(i, acc, out):
        acc = acc + inputs.read(i)
        return i + 1, acc, out.write(i, acc * 2.0)
    _, acc, out = tf.while_loop(lambda i, a, o: i < n, body,
                                [0, tf.zeros([3]), tf.TensorArray(tf.float32, size=n)])
    stacked, size, joined = out.stack(), out.size(), out.concat()
    value = np.arange(12, dtype=np.float32).reshape(4, 3)
    got = run([acc, stacked, size, joined], {x: value})
    np.testing.assert_allclose(got[0], value.sum(0))
    np.testing.assert_allclose(got[1], np.cumsum(value, 0) * 2)
    assert got[2] == 4
    np.testing.assert_allclose(got[3], (np.cumsum(value, 0) * 2).reshape(-1))
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"TensorArrayV3", "TensorArrayScatterV3", "TensorArrayReadV3",
            "TensorArrayWriteV3", "TensorArrayGatherV3", "TensorArraySizeV3",
            "TensorArrayConcatV3"} <= types


def test_tensor_array_split_gather_dynamic_size_and_errors():
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    ta = ta.split(tf.constant(np.arange(6, dtype=np.float32)), [2, 1, 3])
    parts = [ta.read(k) for k in range(3)]
    picked = tf.TensorArray(tf.float32, size=3).unstack(tf.constant([[1.0], [2.0], [3.0]]))
    gathered = picked.gather([2, 0])
    got = run(parts + [gathered])
    np.testing.assert_allclose(got[0], [0, 1])
    np.testing.assert_allclose(got[2], [3, 4, 5])
    np.testing.assert_allclose(got[3], [[3.0], [1.0]])
    twice = tf.TensorArray(tf.float32, size=2).write(0, 1.0).write(0, 2.0)
    with pytest.raises(errors.InvalidArgumentError, match="already been written"):
        run(twice.flow)
    with pytest.raises(errors.InvalidArgumentError, match="index 5 but array size is: 2"):
        run(tf.TensorArray(tf.float32, size=2).write(5, 1.0).flow)
    with pytest.raises(TypeError, match="TensorArray dtype is float32"):
        tf.TensorArray(tf.float32, size=2).write(0, tf.constant(1))


# -- GraphDefs -----------------------------------------------------------------
def test_graph_def_with_cond_and_while_round_trips_and_runs_the_same():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        y = tf.cond(x > 0, lambda: x * 2.0, lambda: x - 1.0, name="c")
        _, acc = tf.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, a * x),
                               [0, tf.constant(1.0)], name="w")
        tf.identity(y, name="y")
        tf.identity(acc, name="acc")
        with tf.Session() as sess:
            before = [sess.run(["y:0", "acc:0"], {"x:0": v}) for v in (3.0, -2.0)]
    graph_def = g.as_graph_def()
    parsed = tf.GraphDef.FromString(graph_def.SerializeToString())
    with tf.Graph().as_default():
        tf.import_graph_def(parsed, name="")
        with tf.Session() as sess:
            after = [sess.run(["y:0", "acc:0"], {"x:0": v}) for v in (3.0, -2.0)]
    assert before == after == [[6.0, 81.0], [-3.0, 16.0]]


# What TF 1.x writes for `tf.cond(x > 0, lambda: x * 2., lambda: x - 1.)` and for
# `tf.while_loop(lambda i: i < 5, lambda i: i + 2, [0])` (node names, op types and
# attrs as TF serializes them; shapes and _output_shapes left out).
_TF_GRAPH = """
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape { unknown_rank: true } } } }
node { name: "Greater/y" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 0 } } } }
node { name: "Greater" op: "Greater" input: "x" input: "Greater/y"
  attr { key: "T" value { type: DT_FLOAT } } }
node { name: "cond/Switch" op: "Switch" input: "Greater" input: "Greater"
  attr { key: "T" value { type: DT_BOOL } } }
node { name: "cond/switch_t" op: "Identity" input: "cond/Switch:1"
  attr { key: "T" value { type: DT_BOOL } } }
node { name: "cond/switch_f" op: "Identity" input: "cond/Switch"
  attr { key: "T" value { type: DT_BOOL } } }
node { name: "cond/pred_id" op: "Identity" input: "Greater"
  attr { key: "T" value { type: DT_BOOL } } }
node { name: "cond/mul/y" op: "Const" input: "^cond/switch_t"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 2 } } } }
node { name: "cond/mul/Switch" op: "Switch" input: "x" input: "cond/pred_id"
  attr { key: "T" value { type: DT_FLOAT } } attr { key: "_class" value { list { s: "loc:@x" } } } }
node { name: "cond/mul" op: "Mul" input: "cond/mul/Switch:1" input: "cond/mul/y"
  attr { key: "T" value { type: DT_FLOAT } } }
node { name: "cond/sub/y" op: "Const" input: "^cond/switch_f"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 } } } }
node { name: "cond/sub/Switch" op: "Switch" input: "x" input: "cond/pred_id"
  attr { key: "T" value { type: DT_FLOAT } } attr { key: "_class" value { list { s: "loc:@x" } } } }
node { name: "cond/sub" op: "Sub" input: "cond/sub/Switch" input: "cond/sub/y"
  attr { key: "T" value { type: DT_FLOAT } } }
node { name: "cond/Merge" op: "Merge" input: "cond/sub" input: "cond/mul"
  attr { key: "N" value { i: 2 } } attr { key: "T" value { type: DT_FLOAT } } }
node { name: "Const" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } } }
node { name: "while/Enter" op: "Enter" input: "Const"
  attr { key: "T" value { type: DT_INT32 } }
  attr { key: "frame_name" value { s: "while/while_context" } }
  attr { key: "is_constant" value { b: false } }
  attr { key: "parallel_iterations" value { i: 10 } } }
node { name: "while/Merge" op: "Merge" input: "while/Enter" input: "while/NextIteration"
  attr { key: "N" value { i: 2 } } attr { key: "T" value { type: DT_INT32 } } }
node { name: "while/Less/y" op: "Const" input: "^while/Merge"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 5 } } } }
node { name: "while/Less" op: "Less" input: "while/Merge" input: "while/Less/y"
  attr { key: "T" value { type: DT_INT32 } } }
node { name: "while/LoopCond" op: "LoopCond" input: "while/Less" }
node { name: "while/Switch" op: "Switch" input: "while/Merge" input: "while/LoopCond"
  attr { key: "T" value { type: DT_INT32 } }
  attr { key: "_class" value { list { s: "loc:@while/Merge" } } } }
node { name: "while/Identity" op: "Identity" input: "while/Switch:1"
  attr { key: "T" value { type: DT_INT32 } } }
node { name: "while/add/y" op: "Const" input: "^while/Identity"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 2 } } } }
node { name: "while/add" op: "AddV2" input: "while/Identity" input: "while/add/y"
  attr { key: "T" value { type: DT_INT32 } } }
node { name: "while/NextIteration" op: "NextIteration" input: "while/add"
  attr { key: "T" value { type: DT_INT32 } } }
node { name: "while/Exit" op: "Exit" input: "while/Switch"
  attr { key: "T" value { type: DT_INT32 } } }
versions { producer: 27 }
"""


def test_a_graph_def_as_tensorflow_serializes_cond_and_while_imports_and_runs():
    from google.protobuf import text_format
    graph_def = text_format.Parse(_TF_GRAPH, tf.GraphDef())
    tf.import_graph_def(graph_def, name="tf")
    with tf.Session() as sess:
        assert sess.run("tf/cond/Merge:0", {"tf/x:0": 4.0}) == 8.0
        assert sess.run("tf/cond/Merge:0", {"tf/x:0": -4.0}) == -5.0
        assert sess.run("tf/while/Exit:0") == 6


def test_a_loop_built_under_control_dependencies_waits_for_them_and_ends():
    v = tf.Variable(1.0)
    bump = tf.assign_add(v, 5.0)
    with tf.control_dependencies([bump]):
        # The body's Const gets the outside control input: it must reach the
        # frame through an Enter, or the Const would wait in the wrong frame.
        out = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + tf.constant(1.0)),
                            [0, v.read_value()])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(out, options=tf.RunOptions(timeout_in_ms=10000)) == [3, 9.0]


def test_cond_branches_returning_ops_run_them_only_when_taken():
    flag = tf.placeholder(tf.bool, [])
    v = tf.Variable(0.0)
    step = tf.cond(flag, lambda: tf.group(tf.assign_add(v, 1.0)), lambda: tf.no_op())
    with tf.control_dependencies([step]):
        gated = v.read_value()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert [sess.run(gated, {flag: f}) for f in (True, False, True)] == [1.0, 1.0, 2.0]


# What TF 1.x writes for `v.initialized_value()` (slot variables and moving
# averages are made from it): a cond on IsVariableInitialized whose true side
# reads the variable through a RefSwitch.
_TF_INITIALIZED_VALUE = """
node { name: "v/initial_value" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 3 } } } }
node { name: "v" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape {} } } attr { key: "container" value { s: "" } }
  attr { key: "shared_name" value { s: "" } } }
node { name: "v/Assign" op: "Assign" input: "v" input: "v/initial_value"
  attr { key: "T" value { type: DT_FLOAT } } attr { key: "_class" value { list { s: "loc:@v" } } }
  attr { key: "use_locking" value { b: true } } attr { key: "validate_shape" value { b: true } } }
node { name: "v/IsVariableInitialized" op: "IsVariableInitialized" input: "v"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "_class" value { list { s: "loc:@v" } } } }
node { name: "v/cond/Switch" op: "Switch" input: "v/IsVariableInitialized"
  input: "v/IsVariableInitialized" attr { key: "T" value { type: DT_BOOL } } }
node { name: "v/cond/switch_t" op: "Identity" input: "v/cond/Switch:1"
  attr { key: "T" value { type: DT_BOOL } } }
node { name: "v/cond/switch_f" op: "Identity" input: "v/cond/Switch"
  attr { key: "T" value { type: DT_BOOL } } }
node { name: "v/cond/pred_id" op: "Identity" input: "v/IsVariableInitialized"
  attr { key: "T" value { type: DT_BOOL } } }
node { name: "v/cond/read/Switch" op: "RefSwitch" input: "v" input: "v/cond/pred_id"
  attr { key: "T" value { type: DT_FLOAT } } attr { key: "_class" value { list { s: "loc:@v" } } } }
node { name: "v/cond/read" op: "Identity" input: "v/cond/read/Switch:1"
  attr { key: "T" value { type: DT_FLOAT } } }
node { name: "v/cond/Switch_1" op: "Switch" input: "v/initial_value" input: "v/cond/pred_id"
  attr { key: "T" value { type: DT_FLOAT } }
  attr { key: "_class" value { list { s: "loc:@v/initial_value" } } } }
node { name: "v/cond/Merge" op: "Merge" input: "v/cond/Switch_1" input: "v/cond/read"
  attr { key: "N" value { i: 2 } } attr { key: "T" value { type: DT_FLOAT } } }
node { name: "bump" op: "AssignAdd" input: "v" input: "v/initial_value"
  attr { key: "T" value { type: DT_FLOAT } } attr { key: "use_locking" value { b: false } } }
versions { producer: 27 }
"""


def test_tensorflows_initialized_value_cond_with_a_ref_switch_runs(server):
    from google.protobuf import text_format
    tf.import_graph_def(text_format.Parse(_TF_INITIALIZED_VALUE, tf.GraphDef()), name="")
    tf.Session.reset(server.target)  # no `v` of an earlier test on this server
    with tf.Session(server.target) as sess:
        assert sess.run("v/cond/Merge:0") == 3.0   # not initialized: the initial value
        sess.run("v/Assign")
        sess.run("bump")
        assert sess.run("v/cond/Merge:0") == 6.0   # initialized: the variable, by reference
