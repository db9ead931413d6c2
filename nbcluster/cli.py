"""The `nbcluster` command: `nbcluster demo` runs the built-in example."""
from __future__ import annotations

import argparse
import sys
import time


def demo() -> int:
    """A local 1 ps + 2 worker cluster of processes: one graph across all three
    tasks, then a short parameter-server training run.

    Prints each task's pid and target, the results (checked against NumPy),
    the task/device each op ran on, and the training loss as it falls, then
    stops every task process by pid.
    """
    import numpy as np

    import nbcluster as tf
    from nbcluster.launch import Cluster

    start = time.perf_counter()
    with Cluster.local(ps=1, worker=2, name="demo") as cluster:
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
        ok = _train(tf, cluster) and ok
    print(f"stopped all 3 tasks; {time.perf_counter() - start:.1f} s")
    return 0 if ok else 1


def _train(tf, cluster, steps: int = 100) -> bool:
    """Trains the tutorial MLP with its variables on the ps; True if the loss fell."""
    from nbcluster.examples.mlp import build_mlp
    from nbcluster.examples.synthetic import Batches, mnist_like

    x_train, y_train = mnist_like(4096, seed=1)
    x_test, y_test = mnist_like(1024, seed=2)
    graph = tf.Graph()
    with graph.as_default(), tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:0", cluster=cluster.spec)):
        step = tf.train.get_or_create_global_step()
        model = build_mlp(tf.train.GradientDescentOptimizer(0.1), global_step=step)
        init = tf.global_variables_initializer()
    print("training the 784-128-10 MLP: variables on /job:ps/task:0, steps on worker 0")
    batches = Batches(x_train, y_train, 128)
    test_feed = {model.x: x_test, model.labels: y_test}
    with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
        sess.run(init)
        first = sess.run(model.loss, test_feed)
        start = time.perf_counter()
        for i in range(1, steps + 1):
            bx, by = batches.next()
            _, loss = sess.run([model.train_op, model.loss], {model.x: bx, model.labels: by})
            if i % 25 == 0:
                print(f"  step {i:>3}  loss {loss:.4f}")
        seconds = time.perf_counter() - start
        last, accuracy = sess.run([model.loss, model.accuracy], test_feed)
    print(f"held-out loss {first:.3f} -> {last:.4f}, accuracy {accuracy:.3f}; "
          f"{steps / seconds:.0f} steps/s")
    return bool(last < first)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="nbcluster", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="start a local 1 ps + 2 worker cluster, run a graph and a short training on it")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo()
    return 2


if __name__ == "__main__":
    sys.exit(main())
