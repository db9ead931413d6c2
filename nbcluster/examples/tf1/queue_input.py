"""Queue-based input as TF1 programs feed a trainer without feed_dict: the samples
sliced one at a time by `tf.train.slice_input_producer` and shuffled into batches
by `tf.train.shuffle_batch`, whose queue runners the MonitoredTrainingSession
starts on each worker; the model's variables on the ps.

Run one line per task, in any order:
  python queue_input.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=ps --task_index=0
  python queue_input.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=worker --task_index=0
  python queue_input.py --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=worker --task_index=1
"""
import mnist_data
import numpy as np

import nbcluster as tf

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("worker_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
flags.DEFINE_integer("task_index", 0, "Index of task within the job")
flags.DEFINE_integer("train_steps", 300, "Global steps to train for")
flags.DEFINE_integer("batch_size", 64, "Samples per batch")
FLAGS = flags.FLAGS


def main(_):
    cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                                    "worker": FLAGS.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return

    images, labels = mnist_data.samples(2048, seed=FLAGS.task_index + 1)
    with tf.device("/job:worker/task:%d" % FLAGS.task_index):
        image, label = tf.train.slice_input_producer([images, labels], shuffle=True,
                                                     seed=FLAGS.task_index)
        image_batch, label_batch = tf.train.shuffle_batch(
            [image, label], batch_size=FLAGS.batch_size, capacity=512,
            min_after_dequeue=128, num_threads=2, seed=FLAGS.task_index)
    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % FLAGS.task_index, cluster=cluster)):
        w = tf.Variable(tf.zeros([784, 10]), name="w")
        b = tf.Variable(tf.zeros([10]), name="b")
        logits = tf.matmul(image_batch, w) + b
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=label_batch,
                                                                         logits=logits))
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=global_step)

    losses = []
    with tf.train.MonitoredTrainingSession(
            master=server.target, is_chief=(FLAGS.task_index == 0),
            hooks=[tf.train.StopAtStepHook(last_step=FLAGS.train_steps)],
            config=tf.ConfigProto(device_filters=["/job:ps",
                                                  "/job:worker/task:%d" % FLAGS.task_index])
    ) as sess:
        while not sess.should_stop():
            _, value = sess.run([train_op, loss])
            losses.append(value)
    print("final loss: %.4f" % np.mean(losses[-10:]))


if __name__ == "__main__":
    tf.app.run()
