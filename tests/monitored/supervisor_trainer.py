"""A between-graph trainer in the shape of TF1's "Distributed TensorFlow" how-to: flags,
one process per task, replica_device_setter, Supervisor + managed_session.

Run as `python supervisor_trainer.py --ps_hosts=H:P --worker_hosts=H:P,H:P --job_name=worker
--task_index=I --logdir=DIR`. The ps serves until its stdin closes (its launcher's
word that the workers are done: a ps cannot tell when a worker's last reply reached it),
then exits; each worker prints one JSON line.
"""
import json
import logging
import sys

import nbcluster as tf
from nbcluster.examples.mlp import build_mlp
from nbcluster.examples.synthetic import Batches, mnist_like

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("worker_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
flags.DEFINE_integer("task_index", 0, "Index of task within the job")
flags.DEFINE_string("logdir", "/tmp/train_logs", "Checkpoints and summaries")
flags.DEFINE_integer("steps", 150, "Global steps to train")
flags.DEFINE_float("recovery_wait_secs", 0.2, "A worker's wait between readiness checks")
FLAGS = flags.FLAGS


def main(_):
    logging.basicConfig(level=logging.INFO)  # the waiting worker says so
    ps_hosts, worker_hosts = FLAGS.ps_hosts.split(","), FLAGS.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        sys.stdin.read()  # instead of server.join(): ends when the launcher closes stdin
        server.stop()
        return 0
    with tf.device(tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{FLAGS.task_index}", cluster=cluster)):
        global_step = tf.train.get_or_create_global_step()
        model = build_mlp(tf.train.GradientDescentOptimizer(0.1), global_step=global_step)
        loss_summary = tf.summary.scalar("train_loss", model.loss)
    is_chief = FLAGS.task_index == 0
    # The loss needs a batch fed, so the chief writes it itself (summary_computed)
    # instead of by the summary thread, as TF's how-to does.
    sv = tf.train.Supervisor(is_chief=is_chief, logdir=FLAGS.logdir, global_step=global_step,
                             summary_op=None,
                             save_model_secs=1, save_summaries_secs=1,
                             recovery_wait_secs=FLAGS.recovery_wait_secs)
    x, y = mnist_like(2048, seed=1 + FLAGS.task_index)
    eval_feed = dict(zip((model.x, model.labels), mnist_like(512, seed=99)))
    with sv.managed_session(server.target) as sess:
        first_loss = float(sess.run(model.loss, eval_feed))
        batches, step, local_steps = Batches(x, y, 64, seed=FLAGS.task_index), 0, 0
        while not sv.should_stop() and step < FLAGS.steps:
            bx, by = batches.next()
            _, step, summary = sess.run([model.train_op, global_step, loss_summary],
                                        {model.x: bx, model.labels: by})
            if is_chief and local_steps % 20 == 0:
                sv.summary_computed(sess, summary, global_step=step)
            local_steps += 1
        final_loss = float(sess.run(model.loss, eval_feed))
    print(json.dumps({"task": FLAGS.task_index, "first_loss": first_loss,
                      "final_loss": final_loss, "local_steps": local_steps,
                      "final_step": int(step)}), flush=True)
    server.stop()
    return 0


if __name__ == "__main__":
    tf.app.run()
