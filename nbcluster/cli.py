"""The `nbcluster` command: `nbcluster demo` runs the built-in example."""
from __future__ import annotations

import argparse
import sys
import time


def demo() -> int:
    """A local 1 ps + 2 worker cluster of processes, one graph across all three tasks.

    Prints each task's pid and target, the results (checked against NumPy) and
    the task/device each op ran on, then stops every task process by pid.
    """
    import numpy as np

    import nbcluster as tf
    from nbcluster.launch import LocalCluster

    start = time.perf_counter()
    with LocalCluster({"ps": 1, "worker": 2}) as cluster:
        print(f"cluster: {cluster.spec.as_dict()}")
        for (job, task), target in sorted(cluster.targets.items()):
            print(f"  /job:{job}/task:{task}  pid {cluster.pid(job, task):<7} {target}")
        w_val = np.arange(6, dtype=np.float32).reshape(3, 2)
        x_val = np.ones((2, 3), np.float32)
        graph = tf.Graph()
        with graph.as_default():
            with tf.device("/job:ps/task:0"):
                w = tf.Variable(w_val, name="w")
            with tf.device("/job:worker/task:0"):
                x = tf.placeholder(tf.float32, [None, 3], name="x")
                y = tf.matmul(x, w, name="y")
            with tf.device("/job:worker/task:1"):
                total = tf.reduce_sum(y * 2.0, name="total")
            init = tf.global_variables_initializer()
        with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
            sess.run(init)
            meta = tf.RunMetadata()
            y_val, total_val = sess.run(
                [y, total], {x: x_val},
                options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
        ok = np.allclose(y_val, x_val @ w_val) and np.isclose(total_val, 2 * (x_val @ w_val).sum())
        print(f"session on {cluster.target('worker', 0)} (worker 0's master)")
        print("y =", y_val.tolist())
        print("total =", float(total_val), "(matches NumPy)" if ok else "(DIFFERS from NumPy!)")
        print("where each op ran:")
        for dev in sorted(meta.step_stats.dev_stats, key=lambda d: d.device):
            for node in dev.node_stats:
                print(f"  {node.node_name:<28} {dev.device}")
    print(f"stopped all 3 tasks; {time.perf_counter() - start:.1f} s")
    return 0 if ok else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="nbcluster", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="start a local 1 ps + 2 worker cluster and run a graph on it")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo()
    return 2


if __name__ == "__main__":
    sys.exit(main())
