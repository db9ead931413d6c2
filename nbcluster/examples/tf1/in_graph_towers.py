"""In-graph replication: one client process builds a tower per worker task, averages
the towers' gradients and applies them to variables on the ps, as TF1's multi-tower
programs (cifar10_multi_gpu_train's `average_gradients`) do across tasks; the ps and
worker processes only serve.

Run the ps and workers, then the client, in any order:
  python in_graph_towers.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=ps --task_index=0
  python in_graph_towers.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=worker --task_index=0
  python in_graph_towers.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=worker --task_index=1
  python in_graph_towers.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=client
"""
import argparse

import mnist_data
import numpy as np

import nbcluster as tf


def average_gradients(tower_grads):
    """The mean over towers of each variable's gradient."""
    average_grads = []
    for grad_and_vars in zip(*tower_grads):
        grads = [tf.expand_dims(g, 0) for g, _ in grad_and_vars]
        grad = tf.reduce_mean(tf.concat(axis=0, values=grads), 0)
        average_grads.append((grad, grad_and_vars[0][1]))
    return average_grads


def main(args):
    cluster = tf.train.ClusterSpec({"ps": args.ps_hosts.split(","),
                                    "worker": args.worker_hosts.split(",")})
    if args.job_name != "client":
        tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index).join()
        return
    towers = len(cluster.job_tasks("worker"))
    with tf.device("/job:ps/task:0"):
        w = tf.get_variable("w", [784, 10], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [10], initializer=tf.zeros_initializer())
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.GradientDescentOptimizer(0.5)
    inputs, tower_grads, tower_losses = [], [], []
    for i in range(towers):
        with tf.device("/job:worker/task:%d" % i), tf.name_scope("tower_%d" % i):
            x = tf.placeholder(tf.float32, [None, 784])
            y = tf.placeholder(tf.float32, [None, 10])
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(
                labels=y, logits=tf.matmul(x, w) + b))
            inputs.append((x, y))
            tower_losses.append(loss)
            tower_grads.append(opt.compute_gradients(loss, [w, b]))
    with tf.device("/job:ps/task:0"):
        train_op = opt.apply_gradients(average_gradients(tower_grads), global_step=global_step)
        mean_loss = tf.add_n(tower_losses) / towers

    data = [mnist_data.read_data_sets(seed=i) for i in range(towers)]
    losses = []
    with tf.Session("grpc://" + cluster.task_address("worker", 0)) as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(args.train_steps):
            feed = {}
            for (x, y), d in zip(inputs, data):
                feed[x], feed[y] = d.train.next_batch(64)
            _, value = sess.run([train_op, mean_loss], feed)
            losses.append(value)
        print("global step: %d" % sess.run(global_step))
    print("final loss: %.4f" % np.mean(losses[-10:]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ps_hosts", required=True)
    parser.add_argument("--worker_hosts", required=True)
    parser.add_argument("--job_name", required=True, choices=["ps", "worker", "client"])
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--train_steps", type=int, default=200)
    main(parser.parse_args())
