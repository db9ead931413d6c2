"""Writes a GraphDef TensorFlow built with resource variables, and TF's own results.

Run as `python tf_resource_graph.py OUT.npz OPTIMIZER` (needs tensorflow). TF1
graph mode with resource variables enabled, as tf.compat.v1 code under TF2
has them: a dense weight and a table read by embedding_lookup (ResourceGather),
trained STEPS steps; saves the serialized GraphDef (taken before any run), the
names to run and fetch, and the values TF computed.
"""
import sys

import numpy as np
import tensorflow.compat.v1 as tf

STEPS = 4
RNG = np.random.default_rng(9)
W0 = RNG.uniform(-1, 1, (3, 2)).astype(np.float32)
E0 = RNG.uniform(-1, 1, (5, 3)).astype(np.float32)
X = RNG.uniform(-1, 1, (4, 3)).astype(np.float32)
IDS = np.array([4, 1, 4, 0], np.int32)


def main(out: str, optimizer: str) -> None:
    tf.disable_v2_behavior()
    tf.enable_resource_variables()
    with tf.Graph().as_default() as graph:
        w = tf.get_variable("w", initializer=W0)
        emb = tf.get_variable("emb", initializer=E0)
        rows = tf.nn.embedding_lookup(emb, IDS)
        loss = tf.reduce_sum(tf.tanh(tf.matmul(X + rows, w)) ** 2)
        step = tf.train.get_or_create_global_step()
        opt = {"sgd": lambda: tf.train.GradientDescentOptimizer(0.1),
               "adam": lambda: tf.train.AdamOptimizer(0.05)}[optimizer]()
        train = opt.minimize(loss, global_step=step)
        init = tf.global_variables_initializer()
        reads = [v.read_value() for v in (w, emb, step)]
        graph_def = graph.as_graph_def().SerializeToString()
        with tf.Session() as sess:
            sess.run(init)
            for _ in range(STEPS):
                sess.run(train)
            values = sess.run(reads)
    np.savez(out, graph_def=np.frombuffer(graph_def, np.uint8), init=init.name,
             train=train.name, reads=np.array([r.name for r in reads]),
             types=np.array(sorted({n.op for n in graph.as_graph_def().node})),
             w=values[0], emb=values[1], step=values[2])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
