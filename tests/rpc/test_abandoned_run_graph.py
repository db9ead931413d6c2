"""A RunGraph whose caller went away mid-step (its process exited) is
cancelled on the worker, over gRPC and over the same-host data plane alike:
a dequeue left waiting there would take the next element anyone enqueues."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

import nbcluster as tf
from nbcluster.launch import child_env, free_ports
from nbcluster.rpc.worker_client import GrpcWorkerClient
from nbcluster.server import parse_ready_line

pytestmark = pytest.mark.timeout(120)

# Runs as worker 0: its step dequeues on the ps, blocks (the queue is empty),
# and the program ends with the step pending.
_ABANDONING_CLIENT = """
import sys, threading
import nbcluster as tf
server = tf.train.Server(CLUSTER, job_name="worker", task_index=0)
with tf.device("/job:ps/task:0"):
    dequeued = tf.FIFOQueue(4, tf.float32, shared_name="shared").dequeue()
with tf.device("/job:worker/task:0"):
    out = dequeued + 1.0
sess = tf.Session(server.target)
thread = threading.Thread(target=lambda: sess.run(out), daemon=True)
thread.start()
thread.join(1.0)
print("blocked" if thread.is_alive() else "returned", flush=True)
"""


def _last_error_becomes(client: GrpcWorkerClient, word: str, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if word in client.get_status().last_error:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("transport", ["data_plane", "grpc"])
def test_a_step_its_exited_caller_left_pending_is_cancelled(transport):
    env = child_env()
    if transport == "grpc":
        env["NBCLUSTER_DATA_PLANE"] = "grpc"
    ps, worker0, worker1 = free_ports(3)
    cluster = {"ps": [f"127.0.0.1:{ps}"],
               "worker": [f"127.0.0.1:{worker0}", f"127.0.0.1:{worker1}"]}
    task = subprocess.Popen([sys.executable, "-m", "nbcluster.server", "--cluster",
                             json.dumps(cluster), "--job", "ps"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert parse_ready_line(task.stdout.readline()) is not None
        script = f"CLUSTER = {cluster!r}\n" + _ABANDONING_CLIENT
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0 and done.stdout.split() == ["blocked"], done.stderr
        status = GrpcWorkerClient(f"127.0.0.1:{ps}")
        assert _last_error_becomes(status, "CancelledError", 20.0), \
            "the ps still runs the step of a caller that is gone"
        with tf.Graph().as_default():
            server = tf.train.Server(cluster, job_name="worker", task_index=1)
            with tf.device("/job:ps/task:0"):
                queue = tf.FIFOQueue(4, tf.float32, shared_name="shared")
                enqueue, size = queue.enqueue(5.0), queue.size()
            with tf.Session(server.target) as sess:
                sess.run(enqueue)
                assert sess.run(size) == 1  # nothing took it
            server.stop()
    finally:
        task.kill()
        task.communicate()
