"""A TF client program in graph mode with control flow v2 (real TensorFlow), run against a
cluster given as argv: `tf_client_cf2.py TARGET SPEC_JSON`. Its model runs a tf.while_loop
and a tf.cond over resource variables placed on the ps; it trains 5 SGD steps there and,
for reference, in a local TF session. Prints one JSON object with both losses."""
import json
import sys

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1
tf1.disable_eager_execution()
tf1.enable_control_flow_v2()
target, spec = sys.argv[1], json.loads(sys.argv[2])
X = np.random.default_rng(5).standard_normal((8, 4)).astype(np.float32)


def train(session_target, cluster):
    with tf.Graph().as_default() as graph:
        setter = tf1.train.replica_device_setter(
            cluster=tf1.train.ClusterSpec(cluster),
            worker_device="/job:worker/task:0") if cluster else None
        with tf1.device(setter):
            x = tf1.placeholder(tf.float32, [None, 4], name="x")
            w = tf1.get_variable("w", initializer=np.eye(4, dtype=np.float32) * 0.3,
                                 use_resource=True)
            h = tf.cond(tf.reduce_mean(x) > 0, lambda: tf.matmul(x, w), lambda: x)
            _, h = tf.while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, tf.tanh(t @ w) + t),
                                 (0, h))
            loss = tf.reduce_mean(h * h)
            step = tf1.train.GradientDescentOptimizer(0.05).minimize(loss)
        ops = sorted({n.op for n in graph.as_graph_def().node})
        losses = []
        with tf1.Session(session_target) as sess:
            sess.run(tf1.global_variables_initializer())
            for _ in range(5):
                losses.append(float(sess.run([loss, step], {x: X})[0]))
        return losses, ops


losses, ops = train(target, spec)
print(json.dumps({"losses": losses, "reference_losses": train("", None)[0], "ops": ops}))
