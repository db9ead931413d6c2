"""A TensorFlow 1.x client program (real TensorFlow) run against a cluster
given as argv: `tf_client.py TARGET SPEC_JSON [resource]`. It trains a small MLP with
TF's own losses and optimizers there and, for reference, in a local TF
session; then checks large fetches and feeds, make_callable, step stats,
errors, partial runs and Reset. Prints one JSON object."""
import json
import sys

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1
target, spec = sys.argv[1], json.loads(sys.argv[2])
if sys.argv[3:] == ["resource"]:
    tf1.disable_eager_execution()  # TF2's defaults otherwise: resource variables
else:
    tf1.disable_v2_behavior()  # TF1 programs: graph mode, ref variables
rng = np.random.default_rng(7)
X = rng.standard_normal((32, 20)).astype(np.float32)
Y = rng.integers(0, 5, 32)
out: dict = {}


def train(session_target, cluster):
    """Losses of 4 SGD then 4 Adam steps; variables on the ps when `cluster`."""
    with tf.Graph().as_default():
        setter = tf1.train.replica_device_setter(
            cluster=tf1.train.ClusterSpec(cluster),
            worker_device="/job:worker/task:0") if cluster else None
        with tf1.device(setter):
            tf1.set_random_seed(3)
            x = tf1.placeholder(tf.float32, [None, 20], name="x")
            y = tf1.placeholder(tf.int64, [None], name="y")
            w1 = tf1.get_variable("w1", [20, 16],
                                  initializer=tf1.constant_initializer(
                                      np.linspace(-0.5, 0.5, 320).reshape(20, 16)))
            b1 = tf1.get_variable("b1", [16], initializer=tf1.zeros_initializer())
            w2 = tf1.get_variable("w2", [16, 5],
                                  initializer=tf1.constant_initializer(
                                      np.linspace(0.3, -0.3, 80).reshape(16, 5)))
            hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
            logits = tf.matmul(hidden, w2)
            loss = tf1.losses.softmax_cross_entropy(tf.one_hot(y, 5), logits)
            sgd = tf1.train.GradientDescentOptimizer(0.1).minimize(loss)
            adam = tf1.train.AdamOptimizer(0.01).minimize(loss)
        losses = []
        with tf1.Session(session_target) as sess:
            sess.run(tf1.global_variables_initializer())
            for op in [sgd] * 4 + [adam] * 4:
                losses.append(float(sess.run([loss, op], {x: X, y: Y})[0]))
            losses.append(float(sess.run(loss, {x: X, y: Y})))
        return losses


out["losses"] = train(target, spec)
out["reference_losses"] = train("", None)

with tf.Graph().as_default():
    n_small, n_large = 2 << 20, 64 << 20  # 8 MiB and 256 MiB of float32
    small = tf.fill([n_small], 1.5)
    large = tf.fill([n_large], 0.25)
    fed = tf1.placeholder(tf.float32, [None], name="fed")
    fed_sum = tf.reduce_sum(fed)
    with tf1.device("/job:ps/task:0"):
        v = tf1.get_variable("v", [3], initializer=tf1.constant_initializer([1.0, 2.0, 3.0]))
    doubled = v * 2.0
    bad = tf.reshape(fed, [3])
    with tf1.Session(target) as sess:
        got = sess.run(small)
        out["fetch_8mib"] = [list(got.shape), float(got.sum())]
        got = sess.run(large)
        out["fetch_256mib"] = [list(got.shape), float(got[0]), float(got[-1])]
        del got
        out["feed_64mib"] = float(sess.run(fed_sum, {fed: np.full(16 << 20, 0.5, np.float32)}))
        sess.run(v.initializer)
        call = sess.make_callable([doubled, fed_sum], feed_list=[fed])
        out["callable"] = [np.asarray(r).tolist() for r in call(np.ones(4, np.float32))]
        out["callable_again"] = [np.asarray(r).tolist() for r in call(np.ones(2, np.float32))]
        meta = tf1.RunMetadata()
        sess.run(doubled, options=tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE),
                 run_metadata=meta)
        out["step_stats_devices"] = sorted({d.device for d in meta.step_stats.dev_stats})
        out["step_stats_nodes"] = sorted({n.node_name for d in meta.step_stats.dev_stats
                                          for n in d.node_stats})
        try:
            sess.run(bad, {fed: np.ones(8, np.float32)})
        except tf.errors.OpError as e:
            out["error"] = [type(e).__name__, e.message]
        out["after_error"] = np.asarray(sess.run(doubled)).tolist()
        try:
            sess.partial_run_setup([doubled], [])
        except tf.errors.OpError as e:
            out["partial_run"] = [type(e).__name__, e.message]
    tf1.Session.reset(target)
    with tf1.Session(target) as sess:
        try:
            sess.run(doubled)
        except tf.errors.OpError as e:
            out["after_reset"] = type(e).__name__

print(json.dumps(out))
