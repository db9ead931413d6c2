"""A MonitoredTrainingSession trainer with the hooks and summaries TF1 programs add:
argparse for the cluster (`parse_known_args`, the rest handed to `tf.app.run`), a
stop hook, a logging hook, a NaN check, scalar and histogram summaries that the
chief writes for TensorBoard, and checkpoints in `--log_dir`.

Run one line per task, in any order:
  python monitored_summaries.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=ps --task_index=0
  python monitored_summaries.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=worker --task_index=0 --log_dir=logs
  python monitored_summaries.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=worker --task_index=1 --log_dir=logs
"""
import argparse
import glob
import os
import sys

import mnist_data
import numpy as np

import nbcluster as tf

FLAGS = None


def main(_):
    cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                                    "worker": FLAGS.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return
    is_chief = FLAGS.task_index == 0

    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % FLAGS.task_index, cluster=cluster)):
        x = tf.placeholder(tf.float32, [None, 784], name="x")
        y_ = tf.placeholder(tf.float32, [None, 10], name="y_")
        with tf.variable_scope("hidden"):
            w = tf.get_variable("weights", [784, 64],
                                initializer=tf.truncated_normal_initializer(stddev=1.0 / 28))
            b = tf.get_variable("biases", [64], initializer=tf.zeros_initializer())
            hidden = tf.nn.relu(tf.matmul(x, w) + b)
            tf.summary.histogram("weights", w)
        with tf.variable_scope("softmax"):
            w2 = tf.get_variable("weights", [64, 10],
                                 initializer=tf.truncated_normal_initializer(stddev=0.125))
            b2 = tf.get_variable("biases", [10], initializer=tf.zeros_initializer())
            logits = tf.matmul(hidden, w2) + b2
        loss = tf.reduce_mean(
            tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=logits), name="loss")
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(y_, 1)),
                                          tf.float32), name="accuracy")
        tf.summary.scalar("loss", loss)
        tf.summary.scalar("accuracy", accuracy)
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss, global_step=global_step)

    hooks = [tf.train.StopAtStepHook(last_step=FLAGS.max_steps),
             tf.train.NanTensorHook(loss),
             tf.train.LoggingTensorHook({"step": global_step, "loss": loss}, every_n_iter=50)]
    data = mnist_data.read_data_sets(seed=FLAGS.task_index)
    losses = []
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief,
                                           checkpoint_dir=FLAGS.log_dir, hooks=hooks,
                                           save_summaries_steps=20,
                                           save_checkpoint_secs=None,
                                           save_checkpoint_steps=100,
                                           config=tf.ConfigProto(device_filters=[
                                               "/job:ps",
                                               "/job:worker/task:%d" % FLAGS.task_index])
                                           ) as sess:
        while not sess.should_stop():
            xs, ys = data.train.next_batch(FLAGS.batch_size)
            _, value = sess.run([train_op, loss], feed_dict={x: xs, y_: ys})
            losses.append(value)
    if is_chief:
        events = glob.glob(os.path.join(FLAGS.log_dir, "events.out.tfevents.*"))
        if not events:
            raise RuntimeError("the chief wrote no event file in %s" % FLAGS.log_dir)
        print("event files: %d, latest checkpoint: %s" % (
            len(events), tf.train.latest_checkpoint(FLAGS.log_dir)))
    print("final loss: %.4f" % np.mean(losses[-10:]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.register("type", "bool", lambda v: v.lower() == "true")
    parser.add_argument("--ps_hosts", type=str, default="", help="ps hostname:port pairs")
    parser.add_argument("--worker_hosts", type=str, default="",
                        help="worker hostname:port pairs")
    parser.add_argument("--job_name", type=str, default="", help="One of 'ps', 'worker'")
    parser.add_argument("--task_index", type=int, default=0, help="Index of task within the job")
    parser.add_argument("--log_dir", type=str, default="logs", help="Summaries and checkpoints")
    parser.add_argument("--max_steps", type=int, default=400, help="Global steps to train for")
    parser.add_argument("--batch_size", type=int, default=64, help="Batch size")
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
