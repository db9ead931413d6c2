"""Synchronous data parallelism: `tf.train.SyncReplicasOptimizer` aggregates both
workers' gradients on the ps before each update; its session hook starts the chief's
token queue runner inside a MonitoredTrainingSession.

Run one line per task, in any order:
  python sync_replicas.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=ps --task_index=0
  python sync_replicas.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=worker --task_index=0
  python sync_replicas.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=worker --task_index=1
"""
import mnist_data
import numpy as np

import nbcluster as tf

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("worker_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
flags.DEFINE_integer("task_index", 0, "Index of task within the job")
flags.DEFINE_integer("train_steps", 150, "Aggregated updates to make")
FLAGS = flags.FLAGS


def main(_):
    workers = FLAGS.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","), "worker": workers})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return
    is_chief = FLAGS.task_index == 0

    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % FLAGS.task_index, cluster=cluster)):
        x = tf.placeholder(tf.float32, [None, 784])
        y_ = tf.placeholder(tf.float32, [None, 10])
        w = tf.Variable(tf.zeros([784, 10]), name="w")
        b = tf.Variable(tf.zeros([10]), name="b")
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(
            labels=y_, logits=tf.matmul(x, w) + b))
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.5),
                                             replicas_to_aggregate=len(workers),
                                             total_num_replicas=len(workers))
        train_op = opt.minimize(loss, global_step=global_step)

    hooks = [opt.make_session_run_hook(is_chief),
             tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]
    data = mnist_data.read_data_sets(seed=FLAGS.task_index)
    losses = []
    config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % FLAGS.task_index])
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief,
                                           hooks=hooks, config=config) as sess:
        while not sess.should_stop():
            xs, ys = data.train.next_batch(64)
            _, value = sess.run([train_op, loss], {x: xs, y_: ys})
            losses.append(value)
    print("final loss: %.4f" % np.mean(losses[-10:]))


if __name__ == "__main__":
    tf.app.run()
