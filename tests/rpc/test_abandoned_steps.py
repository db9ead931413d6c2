"""A step whose caller went away mid-step (its process exited) is cancelled:
a RunGraph on its worker, a RunStep on its master, over gRPC and over the
same-host data plane alike. A dequeue left waiting would take the next
element anyone enqueues."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

import nbcluster as tf
from nbcluster.launch import child_env, free_ports
from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient
from nbcluster.server import parse_ready_line

pytestmark = pytest.mark.timeout(120)

# Its step dequeues on the ps, blocks (the queue is empty), and the program
# ends with the step pending. "worker": the program is task worker 1, its
# own master; "client": a client of worker 0's master, no server of its own.
# The program ends only once the ps runs the step: its partition enqueues a
# marker before the dequeue (a first step's session, plan and graph
# registration took more than a second on a loaded host, and a program that
# left before the ps had the step left nothing there to cancel).
_ABANDONING_PROGRAM = """
import sys, threading, time
import nbcluster as tf
if CALLER == "worker":
    server = tf.train.Server(CLUSTER, job_name="worker", task_index=1)
    target = server.target
else:
    target = "grpc://" + CLUSTER["worker"][0]
with tf.device("/job:ps/task:0"):
    began = tf.FIFOQueue(4, tf.float32, shared_name="began")
    with tf.control_dependencies([began.enqueue(1.0)]):
        dequeued = tf.FIFOQueue(4, tf.float32, shared_name="shared").dequeue()
    began_size = began.size()
with tf.device("/job:worker/task:0"):
    out = dequeued + 1.0
sess = tf.Session(target)
thread = threading.Thread(target=lambda: sess.run(out), daemon=True)
thread.start()
with tf.Session(target) as watcher:
    while thread.is_alive() and watcher.run(began_size) == 0:
        time.sleep(0.02)
print("blocked" if thread.is_alive() else "returned", flush=True)
"""


def _last_error_becomes(client: GrpcWorkerClient, word: str, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if word in client.get_status().last_error:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def tasks():
    started: list = []

    def start(cluster: dict, job: str, task: int, env: dict) -> None:
        proc = subprocess.Popen([sys.executable, "-m", "nbcluster.server", "--cluster",
                                 json.dumps(cluster), "--job", job, "--task", str(task)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        started.append(proc)
        assert parse_ready_line(proc.stdout.readline()) is not None, proc.stderr.read()
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.communicate()


@pytest.mark.parametrize("caller", ["worker", "client"])
@pytest.mark.parametrize("transport", ["data_plane", "grpc"])
def test_a_step_its_exited_caller_left_pending_is_cancelled(tasks, caller, transport):
    env = child_env()
    if transport == "grpc":
        env["NBCLUSTER_DATA_PLANE"] = "grpc"
    ps, worker0, worker1 = free_ports(3)
    cluster = {"ps": [f"127.0.0.1:{ps}"],
               "worker": [f"127.0.0.1:{worker0}", f"127.0.0.1:{worker1}"]}
    procs = [tasks(cluster, "ps", 0, env), tasks(cluster, "worker", 0, env)]
    script = f"CLUSTER, CALLER = {cluster!r}, {caller!r}\n" + _ABANDONING_PROGRAM
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.split() == ["blocked"], done.stderr
    for proc in procs:
        assert proc.poll() is None, f"a task exited ({proc.returncode}): {proc.communicate()}"
    status = GrpcWorkerClient(f"127.0.0.1:{ps}")
    assert _last_error_becomes(status, "CancelledError", 20.0), \
        "the ps still runs the step of a caller that is gone"
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            queue = tf.FIFOQueue(4, tf.float32, shared_name="shared")
            enqueue, size = queue.enqueue(5.0), queue.size()
        with tf.Session(f"grpc://127.0.0.1:{worker0}") as sess:
            sess.run(enqueue)
            assert sess.run(size) == 1  # nothing took it
