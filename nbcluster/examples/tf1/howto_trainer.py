"""Between-graph replication the way TensorFlow's "Distributed TensorFlow" how-to
trains: flags name the cluster, every task is its own process, the workers train
one model whose variables live on the ps through a MonitoredTrainingSession.

Run one line per task, in any order:
  python howto_trainer.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=ps --task_index=0
  python howto_trainer.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=worker --task_index=0
  python howto_trainer.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=worker --task_index=1
"""
import mnist_data
import numpy as np

import nbcluster as tf

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("worker_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
flags.DEFINE_integer("task_index", 0, "Index of task within the job")
flags.DEFINE_integer("train_steps", 400, "Global steps to train for")
flags.DEFINE_float("learning_rate", 0.05, "Adagrad learning rate")
FLAGS = flags.FLAGS


def main(_):
    cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                                    "worker": FLAGS.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return

    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % FLAGS.task_index, cluster=cluster)):
        x = tf.placeholder(tf.float32, [None, 784])
        y_ = tf.placeholder(tf.float32, [None, 10])
        w1 = tf.Variable(tf.truncated_normal([784, 100], stddev=1.0 / 28), name="w1")
        b1 = tf.Variable(tf.zeros([100]), name="b1")
        w2 = tf.Variable(tf.truncated_normal([100, 10], stddev=0.1), name="w2")
        b2 = tf.Variable(tf.zeros([10]), name="b2")
        hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
        logits = tf.matmul(hidden, w2) + b2
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.AdagradOptimizer(FLAGS.learning_rate).minimize(
            loss, global_step=global_step)

    data = mnist_data.read_data_sets(seed=FLAGS.task_index)
    hooks = [tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]
    losses = []
    # A worker's session needs the ps and itself only, not a peer that may have finished.
    config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % FLAGS.task_index])
    with tf.train.MonitoredTrainingSession(master=server.target,
                                           is_chief=(FLAGS.task_index == 0),
                                           hooks=hooks, config=config) as mon_sess:
        while not mon_sess.should_stop():
            batch_xs, batch_ys = data.train.next_batch(100)
            _, loss_value = mon_sess.run([train_op, loss], feed_dict={x: batch_xs, y_: batch_ys})
            losses.append(loss_value)
    print("worker %d ran %d steps" % (FLAGS.task_index, len(losses)))
    print("final loss: %.4f" % np.mean(losses[-10:]))


if __name__ == "__main__":
    tf.app.run(main=main)
