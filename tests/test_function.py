"""tf.function: one trace per input signature, inlined copies, state shared by copies."""
import collections

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.function import ElementIterator, Function, TensorSpec, function

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def f32(*shape, value=1.0):
    return np.full(shape, value, np.float32)


def test_traces_once_per_signature():
    traces = []

    @function
    def scale(x, factor=2.0):
        traces.append(x.shape.as_list())
        return x * factor

    a = scale(f32(3))
    b = scale(f32(3, value=5.0))          # same dtype/shape: no new trace
    c = scale(f32(2))                     # new shape
    d = scale(f32(3), 3.0)                # a Python scalar is part of the signature
    e = scale(np.ones(3, np.float64))     # new dtype
    assert traces == [[3], [2], [3], [3]]
    assert scale.experimental_get_tracing_count() == 4
    with tf.Session() as sess:
        got = sess.run([a, b, c, d, e])
    np.testing.assert_allclose(got[0], [2, 2, 2])
    np.testing.assert_allclose(got[1], [10, 10, 10])
    np.testing.assert_allclose(got[2], [2, 2])
    np.testing.assert_allclose(got[3], [3, 3, 3])
    assert got[4].dtype == np.float64


def test_tensor_arguments_are_inlined_into_the_callers_graph(graph):
    @function
    def affine(x, w, b):
        return tf.matmul(x, w) + b

    x = tf.placeholder(tf.float32, [None, 2])
    w = tf.constant([[1.0], [2.0]])
    y = affine(x, w, tf.constant([0.5]))
    assert y.graph is graph and y.shape.as_list() == [None, 1]
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {x: [[1, 1], [2, 0]]}), [[3.5], [2.5]])


def test_input_signature_gives_one_trace_and_rejects_misfits():
    @function(input_signature=[TensorSpec([None, 2], tf.float32)])
    def total(x):
        return tf.reduce_sum(x)

    outs = [total(f32(n, 2)) for n in (1, 3, 5)]
    assert total.experimental_get_tracing_count() == 1
    with tf.Session() as sess:
        assert sess.run(outs) == [2.0, 6.0, 10.0]
    with pytest.raises(ValueError, match="not compatible"):
        total(f32(2, 3))
    with pytest.raises(ValueError, match="not compatible"):
        total(np.ones((1, 2), np.int32))


def test_stateful_ops_run_without_being_returned_in_program_order():
    v = tf.Variable(0.0)

    @function
    def reset_then_add(x):
        v.assign(10.0)
        v.assign_add(x)

    run = reset_then_add(np.float32(2.5))
    assert isinstance(run, tf.Operation)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(5):  # unordered, the add could land before the assign
            sess.run(run)
            assert sess.run(v) == 12.5


def test_a_read_after_an_assign_sees_it():
    v = tf.Variable(1.0)

    @function
    def bump_and_read():
        v.assign_add(1.0)
        return v.read_value()

    out = bump_and_read()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert [float(sess.run(out)) for _ in range(4)] == [2.0, 3.0, 4.0, 5.0]


def test_reads_and_writes_of_a_variable_keep_program_order():
    v = tf.Variable(1.0)

    @function
    def steps():
        before = v.read_value()
        v.assign(5.0)
        v.assign(7.0)
        doubled = v * 2.0   # the Variable's own snapshot, made outside the function
        v.assign_add(1.0)
        return before, doubled, v + 0.0, v.read_value()

    out = steps()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for start in (1.0, 8.0, 8.0):
            assert [float(x) for x in sess.run(out)] == [start, 14.0, 8.0, 8.0]


def test_tf_remote_value_docstring_example_gives_tfs_value():
    v1, v2 = tf.Variable(0.0), tf.Variable(1.0)

    @function
    def worker_fn():
        v1.assign_add(0.1)
        v2.assign_sub(0.2)
        return v1.read_value() / v2.read_value()

    out = worker_fn()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(out) == np.float32(0.125)


def test_queue_ops_keep_program_order():
    q = tf.FIFOQueue(10, [tf.float32], shapes=[[]])

    @function
    def fill():
        q.enqueue([1.0])
        q.enqueue([2.0])
        return q.size()

    out = fill()
    with tf.Session() as sess:
        assert [int(sess.run(out)) for _ in range(3)] == [2, 4, 6]


def test_stateful_ops_without_state_wait_for_one_another(graph):
    @function
    def draws():
        return tf.random_uniform([2]), tf.random_uniform([2])

    def draw_of(t):
        stack = [t.op]
        while stack:
            op = stack.pop()
            if op.type == "RandomUniform":
                return op
            stack.extend(x.op for x in op.inputs)

    first, second = draws()
    assert draw_of(first) in draw_of(second).control_inputs


def test_outputs_wait_for_side_effects():
    v = tf.Variable(1.0)

    @function
    def bump():
        v.assign_add(1.0)
        return tf.constant(7.0)

    out = bump()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(out) == 7.0
        assert sess.run(out) == 7.0
        assert sess.run(v) == 3.0


def test_variables_made_by_the_first_trace_are_shared_by_every_call():
    @function
    def counter_step():
        if not hasattr(counter_step, "v"):
            counter_step.v = tf.Variable(0.0, name="count")
        return counter_step.v.assign_add(1.0)

    a, b = counter_step(), counter_step()
    assert counter_step.experimental_get_tracing_count() == 1
    assert len(tf.global_variables()) == 1
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(a)
        sess.run(b)
        assert sess.run(counter_step.v) == 2.0  # no copy re-ran the initializer


def test_nested_outputs_keep_their_structure():
    Pair = collections.namedtuple("Pair", ["lo", "hi"])

    @function
    def split(x):
        return {"pair": Pair(tf.reduce_min(x), tf.reduce_max(x)), "n": 3, "none": None}

    out = split(np.array([3.0, -1.0, 8.0], np.float32))
    assert out["n"] == 3 and out["none"] is None and isinstance(out["pair"], Pair)
    with tf.Session() as sess:
        assert sess.run(out["pair"]) == Pair(-1.0, 8.0)


def test_instantiate_places_unpinned_ops_on_the_given_device(graph):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0)

    @function
    def step(x):
        return v.assign_add(tf.reduce_sum(x * 2.0))

    concrete = step.get_concrete_function(f32(4))
    instance = concrete.instantiate(device="/job:worker/task:1", name="on_w1")
    (ph,) = instance.inputs
    assert ph.op.type == "Placeholder" and ph.device == "/job:worker/task:1"
    assert instance.outputs.op.type == "AssignAdd"
    assert instance.outputs.device.startswith("/job:ps/task:0")  # stays with its variable
    mul = [op for op in graph.get_operations() if op.name.startswith("on_w1/")
           and op.type == "Mul"]
    assert [op.device for op in mul] == ["/job:worker/task:1"]
    assert all(op.type != "VariableV2" for op in graph.get_operations()
               if op.name.startswith("on_w1/"))


def test_iterator_arguments_feed_the_next_elements():
    it = ElementIterator((np.full(2, i, np.float32), np.int32(i)) for i in range(6))

    @function
    def two_steps(iterator):
        x1, n1 = next(iterator)
        x2, n2 = next(iterator)
        return tf.reduce_sum(x1) + tf.reduce_sum(x2), n1 + n2

    first = two_steps(it)
    second = two_steps(it)
    assert two_steps.experimental_get_tracing_count() == 1
    with tf.Session() as sess:
        assert sess.run(first) == (2.0, 1)     # elements 0 and 1
        assert sess.run(second) == (10.0, 5)   # elements 2 and 3
    two_steps(it)                              # 4 and 5
    with pytest.raises(errors.OutOfRangeError):
        two_steps(it)


def test_methods_bind_self():
    class Model:
        def __init__(self, k):
            self.k = k

        @function
        def apply(self, x):
            return x * self.k

    m2, m3 = Model(2.0), Model(3.0)
    with tf.Session() as sess:
        assert sess.run(m2.apply(np.float32(5))) == 10.0
        assert sess.run(m3.apply(np.float32(5))) == 15.0
    assert isinstance(Model.apply, Function)


def test_bad_arguments_get_clear_errors():
    with pytest.raises(TypeError, match="callable"):
        function(42)
    with pytest.raises(TypeError, match="TensorSpec"):
        function(lambda x: x, input_signature=[(None, 2)])

    @function
    def one(x):
        return x

    with pytest.raises(TypeError, match="one\\(\\)"):
        one(1, 2)
    with pytest.raises(ValueError, match="does not fit"):
        one.get_concrete_function(f32(2)).instantiate([tf.constant([1, 2])])


def test_input_signature_takes_python_values_as_tensors():
    @function(input_signature=[TensorSpec([], tf.float32), TensorSpec([2], tf.int32)])
    def f(a, b):
        return a * 2.0, b + 1

    outs = [f(1.5, [1, 2]), f(2, np.array([3, 4], np.int32))]  # 2 -> 2.0, as TF converts
    assert f.experimental_get_tracing_count() == 1
    with tf.Session() as sess:
        (a1, b1), (a2, b2) = sess.run(outs)
    assert (a1, a2) == (3.0, 4.0)
    np.testing.assert_array_equal(np.stack([b1, b2]), [[2, 3], [4, 5]])
    with pytest.raises(ValueError, match="not compatible"):
        f(1.5, np.array([3, 4], np.int64))  # arrays keep their dtype
    with pytest.raises(ValueError, match="not compatible"):
        f("x", [1, 2])


def test_nested_functions_inline_into_the_outer_trace():
    @function
    def inner(x):
        return x + 1.0

    @function
    def outer(x):
        return inner(x) * inner(x * 2.0)

    y = outer(np.float32(3.0))
    z = outer(np.float32(4.0))
    assert inner.experimental_get_tracing_count() == 1  # one signature inside
    assert outer.experimental_get_tracing_count() == 1
    with tf.Session() as sess:
        assert sess.run([y, z]) == [28.0, 45.0]


def test_a_concrete_function_from_tensor_specs(graph):
    @function
    def norm(x):
        return tf.sqrt(tf.reduce_sum(x * x))

    concrete = norm.get_concrete_function(TensorSpec([None], tf.float32))
    assert concrete.inputs[0].shape.as_list() == [None]
    assert norm.get_concrete_function(TensorSpec([None], tf.float32)) is concrete
    with tf.Session() as sess:
        assert sess.run(concrete(tf.constant([3.0, 4.0]))) == 5.0
