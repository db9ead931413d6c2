"""Real TensorFlow writes TF2 graphs with functional ops (tf.function, control flow v2).

Usage: tf2_functions.py OUT_DIR. For each case it traces a tf.function,
writes its concrete function's GraphDef (`<case>.pb`, the function library
inside) and an npz of the inputs fed to its placeholders and the outputs TF
computed (`<case>.npz`). Then a TF1-style program with control flow v2
(`training.pb` / `.npz`): resource variables, a cond and a while loop,
tf.gradients through both, one SGD step. Last it prints one JSON line naming
the cases, their placeholders, outputs and op types.
"""
import json
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

out = Path(sys.argv[1])
x = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)


@tf.function
def scaled(v, k):
    return v * k + 1.0


def cond(v):
    return tf.cond(tf.reduce_sum(v) > 0.0, lambda: v * 2.0, lambda: -v)


def while_sum(v):
    i0 = tf.constant(0)
    _, total = tf.while_loop(lambda i, t: i < 5, lambda i, t: (i + 1, t + v * tf.cast(i, v.dtype)),
                             (i0, tf.zeros_like(v)))
    return total


def nested(v):
    # a call inside a loop body inside a branch: functions calling functions
    def body(i, t):
        return i + 1, scaled(t, 0.5)
    return tf.cond(tf.reduce_max(v) > 10.0, lambda: v,
                   lambda: tf.while_loop(lambda i, t: i < 3, body, (0, v))[1])


def call(v):
    return scaled(v, 3.0) - tf.nn.relu(v)


def loop_with_matmul(v):
    def body(i, m):
        return i + 1, tf.tanh(tf.matmul(m, v))
    return tf.while_loop(lambda i, m: i < 4, body, (0, tf.ones((2, 2)) * 0.5))[1]


CASES = {"cond": (cond, [x]), "cond_false": (cond, [-np.abs(x)]),
         "while_sum": (while_sum, [x]), "nested": (nested, [x]), "call": (call, [x]),
         "loop_with_matmul": (loop_with_matmul, [x])}
report = {}
for name, (fn, inputs) in CASES.items():
    concrete = tf.function(fn).get_concrete_function(
        *[tf.TensorSpec(a.shape, tf.as_dtype(a.dtype)) for a in inputs])
    graph_def = concrete.graph.as_graph_def()
    (out / f"{name}.pb").write_bytes(graph_def.SerializeToString())
    values = concrete(*[tf.constant(a) for a in inputs])
    values = values if isinstance(values, (list, tuple)) else [values]
    placeholders = [t.name for t in concrete.inputs]
    outputs = [t.name for t in concrete.outputs]
    np.savez(out / f"{name}.npz", **{f"in{i}": a for i, a in enumerate(inputs)},
             **{f"out{i}": v.numpy() for i, v in enumerate(values)})
    report[name] = {"placeholders": placeholders, "outputs": outputs,
                    "ops": sorted({n.op for n in graph_def.node}),
                    "library": sorted(f.signature.name for f in graph_def.library.function)}

tf1 = tf.compat.v1
tf1.enable_control_flow_v2()
graph = tf1.Graph()
with graph.as_default():
    px = tf1.placeholder(tf.float32, [2, 2], name="x")
    w = tf1.get_variable("w", initializer=np.eye(2, dtype=np.float32) * 0.5,
                         use_resource=True)
    y = tf.cond(tf.reduce_sum(px) > 0, lambda: tf.matmul(px, w), lambda: px - w, name="branch")
    _, z = tf.while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, t + tf.matmul(t, w)), (0, y),
                         name="loop")
    loss = tf.reduce_sum(z * z, name="loss")
    grad_w, grad_x = tf.gradients(loss, [w, px])
    train = tf1.train.GradientDescentOptimizer(0.01).minimize(loss, name="train")
    init = tf1.global_variables_initializer()
    with tf1.Session(graph=graph) as sess:
        sess.run(init)
        before = sess.run([loss, grad_w, grad_x], {px: x})
        sess.run(train, {px: x})
        after = sess.run(loss, {px: x})
graph_def = graph.as_graph_def()
(out / "training.pb").write_bytes(graph_def.SerializeToString())
np.savez(out / "training.npz", x=x, loss=before[0], grad_w=before[1], grad_x=before[2],
         after=after)
report["training"] = {"fetches": [loss.name, grad_w.name, grad_x.name], "train": train.name,
                      "init": init.name, "ops": sorted({n.op for n in graph_def.node})}
print(json.dumps(report))
