"""The `nbcluster` command: `nbcluster demo` runs the built-in example."""
from __future__ import annotations

import argparse
import sys


def demo() -> int:
    """A local server, a small graph across two CPU devices, results and placement."""
    import numpy as np

    import nbcluster as tf

    config = tf.ConfigProto(device_count={"CPU": 2})
    server = tf.train.Server.create_local_server(config=config)
    print(f"server: {server.target}  (job 'localhost', task 0, 2 CPU devices)")
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/cpu:0"):
            w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
            x = tf.placeholder(tf.float32, [None, 3], name="x")
        with tf.device("/cpu:1"):
            y = tf.matmul(x, w, name="y")
            total = tf.reduce_sum(y, name="total")
        init = tf.global_variables_initializer()
    try:
        with tf.Session(server.target, graph=graph) as sess:
            sess.run(init)
            meta = tf.RunMetadata()
            feed = {x: np.ones((2, 3), np.float32)}
            y_val, total_val = sess.run(
                [y, total], feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                run_metadata=meta)
        print("y =", y_val.tolist())
        print("total =", float(total_val))
        print("where each op ran:")
        for dev in meta.step_stats.dev_stats:
            for node in dev.node_stats:
                print(f"  {node.node_name:<28} {dev.device}")
    finally:
        server.stop()
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="nbcluster", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run the built-in example on a local server")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo()
    return 2


if __name__ == "__main__":
    sys.exit(main())
