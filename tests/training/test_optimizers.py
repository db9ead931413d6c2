"""Optimizers: several apply_gradients steps against NumPy references of TF's
update rules, slot variables (names, colocation, initial values), the global
step, and the errors of bad input."""
import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)

STEPS = 4
W0 = np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]], np.float32)
B0 = np.array([0.1, -0.2], np.float32)
RNG = np.random.default_rng(3)
GRADS = [(RNG.standard_normal((3, 2)).astype(np.float32),
          RNG.standard_normal(2).astype(np.float32)) for _ in range(STEPS)]


def _sgd(lr):
    def rule(p, g, s, t):
        return p - lr * g
    return rule


def _momentum(lr, mu, nesterov):
    def rule(p, g, s, t):
        s["accum"] = mu * s.get("accum", 0) + g
        return p - lr * g - lr * mu * s["accum"] if nesterov else p - lr * s["accum"]
    return rule


def _adagrad(lr, init):
    def rule(p, g, s, t):
        s["accum"] = s.get("accum", init) + g * g
        return p - lr * g / np.sqrt(s["accum"])
    return rule


def _adam(lr, b1, b2, eps):
    def rule(p, g, s, t):
        s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
        alpha = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        return p - alpha * s["m"] / (np.sqrt(s["v"]) + eps)
    return rule


CASES = [
    ("sgd", lambda: tf.train.GradientDescentOptimizer(0.1), _sgd(0.1)),
    ("momentum", lambda: tf.train.MomentumOptimizer(0.05, 0.9), _momentum(0.05, 0.9, False)),
    ("nesterov", lambda: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
     _momentum(0.05, 0.9, True)),
    ("adagrad", lambda: tf.train.AdagradOptimizer(0.3, initial_accumulator_value=0.2),
     _adagrad(0.3, 0.2)),
    ("adam", lambda: tf.train.AdamOptimizer(0.02, 0.8, 0.95, 1e-6),
     _adam(0.02, 0.8, 0.95, 1e-6)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_steps_match_numpy_reference(case):
    _, make, rule = case
    w, b = tf.Variable(W0, name="w"), tf.Variable(B0, name="b")
    gw, gb = tf.placeholder(tf.float32, [3, 2]), tf.placeholder(tf.float32, [2])
    step = tf.train.get_or_create_global_step()
    train_op = make().apply_gradients([(gw, w), (gb, b)], global_step=step)
    want, states = [W0.astype(np.float64), B0.astype(np.float64)], [{}, {}]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for t, (g_w, g_b) in enumerate(GRADS, start=1):
            sess.run(train_op, {gw: g_w, gb: g_b})
            want = [rule(p, g, s, t) for p, g, s in zip(want, (g_w, g_b), states)]
        got_w, got_b, got_step = sess.run([w, b, step])
    np.testing.assert_allclose(got_w, want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_b, want[1], rtol=1e-5, atol=1e-6)
    assert got_step == STEPS


def test_adam_beta_powers_decay_per_step():
    w, b = tf.Variable(W0, name="w"), tf.Variable(B0, name="b")
    opt = tf.train.AdamOptimizer(0.1, beta1=0.8, beta2=0.9)
    train_op = opt.apply_gradients([(GRADS[0][0], w), (GRADS[0][1], b)])
    b1p, b2p = opt._get_beta_accumulators(w.graph)
    assert (b1p.name, b2p.name) == ("beta1_power:0", "beta2_power:0")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train_op)
        np.testing.assert_allclose(sess.run([b1p, b2p]), [0.8 ** 4, 0.9 ** 4], rtol=1e-6)


def test_slots_are_colocated_and_named_as_tf():
    with tf.device("/job:ps/task:1"):
        w = tf.Variable(W0, name="w")
    with tf.device("/job:ps/task:0"):
        b = tf.Variable(B0, name="b")
    with tf.device("/job:worker/task:0"):
        opt = tf.train.AdamOptimizer()
        train_op = opt.apply_gradients([(GRADS[0][0], w), (GRADS[0][1], b)])
    assert opt.get_slot_names() == ["m", "v"]
    m, v = opt.get_slot(w, "m"), opt.get_slot(w, "v")
    assert (m.name, v.name) == ("w/Adam:0", "w/Adam_1:0")
    for slot, var in ((m, w), (v, w), (opt.get_slot(b, "m"), b)):
        assert slot.device == var.device
        assert slot.op.get_attr("_class") == [f"loc:@{var.op.name}"]
        assert slot.shape == var.shape and not slot.trainable
        assert slot in tf.global_variables()
    # beta powers live with the first variable by name ("b" < "w").
    assert all(p.device == "/job:ps/task:0" for p in opt._get_beta_accumulators(w.graph))
    updates = {op.name: op for op in w.graph.get_operations() if op.type == "ApplyAdam"}
    assert updates["Adam/update_w/ApplyAdam"].device == "/job:ps/task:1"
    assert updates["Adam/update_b/ApplyAdam"].device == "/job:ps/task:0"
    assert [x.name for x in opt.variables()] == ["b/Adam:0", "b/Adam_1:0", "beta1_power:0",
                                                 "beta2_power:0", "w/Adam:0", "w/Adam_1:0"]
    assert train_op.name == "Adam" and train_op in tf.get_collection("train_op")


def test_slot_initial_values():
    w = tf.Variable(W0, name="w")
    mom, ada = tf.train.MomentumOptimizer(0.1, 0.9), tf.train.AdagradOptimizer(0.1, 0.7)
    mom.apply_gradients([(GRADS[0][0], w)])
    ada.apply_gradients([(GRADS[0][0], w)])
    assert mom.get_slot(w, "momentum").name == "w/Momentum:0"
    assert ada.get_slot(w, "accumulator").name == "w/Adagrad:0"
    assert mom.get_slot(w, "nope") is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(mom.get_slot(w, "momentum")), np.zeros((3, 2)))
        np.testing.assert_allclose(sess.run(ada.get_slot(w, "accumulator")),
                                   np.full((3, 2), 0.7), rtol=1e-7)


def test_slots_are_reused_across_apply_calls():
    w = tf.Variable(W0, name="w")
    opt = tf.train.MomentumOptimizer(0.1, 0.9)
    first = opt.apply_gradients([(GRADS[0][0], w)])
    second = opt.apply_gradients([(GRADS[1][0], w)])
    assert first.name == "Momentum" and second.name == "Momentum_1"
    assert len(opt.variables()) == 1


def test_variables_without_gradient_are_left_alone():
    w, b = tf.Variable(W0, name="w"), tf.Variable(B0, name="b")
    opt = tf.train.GradientDescentOptimizer(1.0)
    train_op = opt.apply_gradients([(GRADS[0][0], w), (None, b)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train_op)
        np.testing.assert_allclose(sess.run(w), W0 - GRADS[0][0], rtol=1e-6)
        np.testing.assert_array_equal(sess.run(b), B0)


def test_learning_rate_as_tensor_and_float64_variable():
    w = tf.Variable(W0.astype(np.float64), name="w")
    lr = tf.placeholder(tf.float32, [])
    train_op = tf.train.GradientDescentOptimizer(lr).apply_gradients(
        [(GRADS[0][0].astype(np.float64), w)])
    with tf.Session() as sess:
        sess.run(w.initializer)
        sess.run(train_op, {lr: 0.25})
        np.testing.assert_allclose(sess.run(w), W0 - 0.25 * GRADS[0][0].astype(np.float64),
                                   rtol=1e-7)


def test_bad_input_errors():
    w = tf.Variable(W0, name="w")
    opt = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        opt.apply_gradients([(None, w)])
    with pytest.raises(ValueError, match="No variables provided"):
        opt.apply_gradients([])
    with pytest.raises(TypeError, match="Variable must be a tf.Variable"):
        opt.apply_gradients([(GRADS[0][0], tf.constant(W0))])
    with pytest.raises(TypeError, match="Gradient must be convertible"):
        opt.apply_gradients([("not a gradient", w)])
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive: 0"):
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(ValueError, match="optimizer name"):
        tf.train.Optimizer(False, "")


def test_global_step():
    assert tf.train.get_global_step() is None
    step = tf.train.get_or_create_global_step()
    assert step is tf.train.get_or_create_global_step() is tf.train.get_global_step()
    assert (step.name, step.dtype, step.trainable) == ("global_step:0", tf.int64, False)
    assert step in tf.global_variables() and step not in tf.trainable_variables()
    assert tf.get_collection("global_step") == [step]
    with pytest.raises(ValueError, match="already exists"):
        tf.train.create_global_step()
    with tf.Graph().as_default():
        assert tf.train.get_global_step() is None  # one per graph
    w = tf.Variable(W0, name="w")
    train_op = tf.train.GradientDescentOptimizer(0.1).apply_gradients(
        [(GRADS[0][0], w)], global_step=step)
    assert train_op.type == "AssignAdd" and train_op.device == step.device
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert tf.train.global_step(sess, step) == 0
        for _ in range(3):
            sess.run(train_op)
        assert tf.train.global_step(sess, step) == 3


def test_global_step_collection_type_checks():
    tf.add_to_collection("global_step", tf.Variable(1.5, name="not_a_step"))
    with pytest.raises(TypeError, match="integer type"):
        tf.train.get_global_step()


def test_global_step_found_by_name_outside_the_collection():
    # TF1 programs often write tf.Variable(0, name="global_step", trainable=False)
    step = tf.Variable(0, name="global_step", trainable=False)
    assert tf.get_collection("global_step") == []
    assert tf.train.get_global_step() is step
    assert tf.train.get_or_create_global_step() is step
    with pytest.raises(ValueError, match="already exists"):
        tf.train.create_global_step()
    hook = tf.train.StopAtStepHook(last_step=2)
    train_op = tf.assign_add(step, 1)
    values = []
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        while not sess.should_stop():
            values.append(sess.run(train_op))
    assert values == [1, 2]  # the hook read the step it found by name


def test_global_step_by_name_type_checks_and_two_in_the_collection(caplog):
    with tf.Graph().as_default():
        tf.Variable(0.5, name="global_step")
        with pytest.raises(TypeError, match="integer type"):
            tf.train.get_global_step()
    with tf.Graph().as_default():
        for _ in range(2):
            tf.add_to_collection("global_step", tf.Variable(0, name="step"))
        assert tf.train.get_global_step() is None  # TF logs an error and gives None
        assert "Multiple tensors in global_step collection" in caplog.text
