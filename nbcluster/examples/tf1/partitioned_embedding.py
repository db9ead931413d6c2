"""A sparse model trained across two ps tasks: an embedding table split in shards by
`tf.fixed_size_partitioner`, looked up shard by shard, updated row by row by Adagrad;
argparse for the cluster, as many TF1 programs do.

Run one line per task, in any order:
  python partitioned_embedding.py --ps_hosts=127.0.0.1:2222,127.0.0.1:2225 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=ps --task_index=0
  python partitioned_embedding.py --ps_hosts=127.0.0.1:2222,127.0.0.1:2225 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=ps --task_index=1
  python partitioned_embedding.py --ps_hosts=127.0.0.1:2222,127.0.0.1:2225 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=worker --task_index=0
  python partitioned_embedding.py --ps_hosts=127.0.0.1:2222,127.0.0.1:2225 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=worker --task_index=1
"""
import argparse

import numpy as np

import nbcluster as tf

VOCABULARY, DIM, IDS_PER_EXAMPLE = 1000, 16, 4


def batches(seed, batch_size):
    """Bags of word ids; the label is whether the bag holds more even ids than odd."""
    rng = np.random.RandomState(seed)
    while True:
        ids = rng.randint(0, VOCABULARY, (batch_size, IDS_PER_EXAMPLE))
        even = (ids % 2 == 0).sum(axis=1)
        labels = (even * 2 > IDS_PER_EXAMPLE).astype(np.float32).reshape(-1, 1)
        yield ids.astype(np.int64), labels


def main(args):
    cluster = tf.train.ClusterSpec({"ps": args.ps_hosts.split(","),
                                    "worker": args.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)
    if args.job_name == "ps":
        server.join()
        return

    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % args.task_index, cluster=cluster)):
        ids = tf.placeholder(tf.int64, [None, IDS_PER_EXAMPLE], name="ids")
        labels = tf.placeholder(tf.float32, [None, 1], name="labels")
        embeddings = tf.get_variable(
            "embeddings", [VOCABULARY, DIM], partitioner=tf.fixed_size_partitioner(2),
            initializer=tf.random_uniform_initializer(-0.1, 0.1))
        bag = tf.reduce_mean(tf.nn.embedding_lookup(embeddings, ids), axis=1)
        w = tf.get_variable("w", [DIM, 1], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
        logits = tf.matmul(bag, w) + b
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels,
                                                                      logits=logits))
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.AdagradOptimizer(1.0).minimize(loss, global_step=global_step)

    data = batches(args.task_index, 64)
    losses = []
    with tf.train.MonitoredTrainingSession(
            master=server.target, is_chief=(args.task_index == 0),
            hooks=[tf.train.StopAtStepHook(last_step=args.train_steps)],
            config=tf.ConfigProto(device_filters=["/job:ps",
                                                  "/job:worker/task:%d" % args.task_index])
    ) as sess:
        while not sess.should_stop():
            xs, ys = next(data)
            _, value = sess.run([train_op, loss], {ids: xs, labels: ys})
            losses.append(value)
    print("final loss: %.4f" % np.mean(losses[-20:]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ps_hosts", required=True)
    parser.add_argument("--worker_hosts", required=True)
    parser.add_argument("--job_name", required=True, choices=["ps", "worker"])
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--train_steps", type=int, default=600)
    main(parser.parse_args())
