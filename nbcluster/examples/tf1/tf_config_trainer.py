"""A trainer driven by TF_CONFIG, as Kubernetes' TFJob, Vertex AI and SageMaker start
one: every task runs this same script; the cluster and the task's role come from the
environment through `TFConfigClusterResolver`. A plain `tf.Session` loop: the chief
initializes and saves a checkpoint at the end, the other worker waits until the
variables are ready.

Run one process per task, in any order, each with its own TF_CONFIG, e.g.:
  TF_CONFIG='{"cluster": {"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]}, "task": {"type": "worker", "index": 0}}' python tf_config_trainer.py
"""
import time

import mnist_data
import numpy as np

import nbcluster as tf


def main():
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    cluster = resolver.cluster_spec()
    server = tf.distribute.Server(cluster, job_name=resolver.task_type,
                                  task_index=resolver.task_id)
    if resolver.task_type == "ps":
        server.join()
        return
    is_chief = resolver.task_id == 0

    with tf.device(tf.train.replica_device_setter(cluster=cluster,
                                                  worker_device="/job:worker/task:%d"
                                                  % resolver.task_id)):
        x = tf.placeholder(tf.float32, [None, 784])
        labels = tf.placeholder(tf.float32, [None, 10])
        w = tf.Variable(tf.random_normal([784, 10], stddev=0.01), name="w")
        b = tf.Variable(tf.zeros([10]), name="b")
        logits = tf.matmul(x, w) + b
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels,
                                                                         logits=logits))
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(0.3).minimize(loss, global_step=global_step)
        init = tf.global_variables_initializer()
        not_ready = tf.report_uninitialized_variables()
        saver = tf.train.Saver()

    data = mnist_data.read_data_sets(seed=resolver.task_id)
    losses = []
    config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % resolver.task_id])
    with tf.Session(server.target, config=config) as sess:
        if is_chief:
            sess.run(init)
        else:
            while len(sess.run(not_ready)) > 0:
                print("worker %d: waiting for the chief to initialize" % resolver.task_id)
                time.sleep(0.5)
        step = 0
        while step < 300:
            xs, ys = data.train.next_batch(100)
            _, step, value = sess.run([train_op, global_step, loss], {x: xs, labels: ys})
            losses.append(value)
        if is_chief:
            print("saved", saver.save(sess, "model.ckpt", global_step=global_step))
    print("final loss: %.4f" % np.mean(losses[-10:]))


if __name__ == "__main__":
    main()
