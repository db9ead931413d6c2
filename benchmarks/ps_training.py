"""Benchmark: steps/s of between-graph training of the 784 -> 256 -> 10 MLP on 1 ps + 2 workers.

TF1's distributed-training recipe: each worker's client runs in its own
process (`python -m benchmarks.ps_training --worker ...`), builds its own
graph under `replica_device_setter` (weights, biases and the global step on
/job:ps/task:0) and runs `GradientDescentOptimizer.minimize` on synthetic
MNIST-like batches of 128 through a session on its own worker. Each step
moves the weights (~0.8 MiB) ps -> worker and the gradients back. `--hidden 128`
gives the smaller MLP of earlier figures; 256 is the size TF 2.21 was measured
with on this machine (260 steps/s).
After 5 warm-up steps the workers meet at a barrier (a counter on the ps),
then each times 200 steps. Rows: the aggregate (all steps / wall time from
the first start to the last end) and each worker's own steps/s, with the
final training and held-out losses; the global step is checked to equal the
sum of all workers' steps.

`--in-process-server` runs each worker's server in its client's process, as
TF1's between-graph recipe does (`tf.train.Server` and the Session in one
script: the Session reaches its master without a gRPC hop); the ps is still
a process of its own. By default each worker's client is a separate process
talking to its worker's server over gRPC. Both give every task process the
same share of the cores for BLAS and the same malloc settings.

Run from the repository root:
python -m benchmarks.ps_training [--hidden N] [--in-process-server]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time

from benchmarks._common import (
    REPO_ROOT,
    child_env,
    client_hugetlb,
    emit,
    local_cluster,
    read_line,
    stop_proc,
)

BATCH = 128
STEPS = 200
WARMUP = 5
WORKERS = 2
LR = 0.1
TIMEOUT_S = 150.0
KEEP_FREED = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456"


def _wait_until(predicate) -> None:
    deadline = time.monotonic() + 60
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("a barrier was not reached in 60 s")
        time.sleep(0.01)


def worker(cluster_json: str, task: int, hidden: int, in_process: bool = False) -> None:
    """One worker's client loop; prints one JSON line of its timings and losses.

    With `in_process`, this process also runs the worker's server and the
    session talks to it without gRPC.
    """
    import nbcluster as tf
    from nbcluster.examples.mlp import build_mlp
    from nbcluster.examples.synthetic import Batches, mnist_like

    cluster = tf.train.ClusterSpec(json.loads(cluster_json))
    server = tf.train.Server(cluster, job_name="worker", task_index=task) if in_process \
        else None
    target = server.target if server is not None \
        else "grpc://" + cluster.task_address("worker", task)
    workers = cluster.num_tasks("worker")
    x, y = mnist_like(8192, seed=1 + task)
    eval_x, eval_y = mnist_like(1024, seed=100)
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(
                worker_device=f"/job:worker/task:{task}", cluster=cluster)):
            step = tf.train.get_or_create_global_step()
            model = build_mlp(tf.train.GradientDescentOptimizer(LR), global_step=step,
                              hidden=hidden)
            ready = tf.Variable(0, trainable=False, name="bench_ready")
            done = tf.Variable(0, trainable=False, name="bench_done")
            mark_ready, mark_done = ready.assign_add(1), done.assign_add(1)
        inited = [tf.is_variable_initialized(v) for v in tf.global_variables()]
        with tf.Session(target) as sess:
            if task == 0:
                sess.run(tf.global_variables_initializer())
            _wait_until(lambda: all(sess.run(inited)))
            batches = Batches(x, y, BATCH, seed=task)
            feeds = [{model.x: bx, model.labels: by}
                     for bx, by in (batches.next() for _ in range(STEPS + WARMUP))]
            for feed in feeds[:WARMUP]:
                sess.run(model.train_op, feed)
            sess.run(mark_ready)
            _wait_until(lambda: sess.run(ready) >= workers)
            start = time.time()
            for feed in feeds[WARMUP:-1]:
                sess.run(model.train_op, feed)
            _, last_loss = sess.run([model.train_op, model.loss], feeds[-1])
            end = time.time()
            sess.run(mark_done)
            _wait_until(lambda: sess.run(done) >= workers)
            global_step = int(sess.run(step))
            eval_loss = float(sess.run(model.loss, {model.x: eval_x, model.labels: eval_y}))
    print(json.dumps({"task": task, "start": start, "end": end, "last_loss": float(last_loss),
                      "eval_loss": eval_loss, "global_step": global_step}), flush=True)


def _run_workers(spec: str, hidden: int, env: dict, in_process: bool) -> list:
    """Each worker's client process, run to its end; their JSON rows."""
    extra = ["--in-process-server"] if in_process else []
    procs = [subprocess.Popen([sys.executable, "-m", "benchmarks.ps_training", "--worker",
                               spec, "--task", str(t), "--hidden", str(hidden), *extra],
                              cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, text=True)
             for t in range(WORKERS)]
    try:
        return [json.loads(p.communicate(timeout=TIMEOUT_S)[0].strip().splitlines()[-1])
                for p in procs]
    finally:
        for p in procs:  # by pid, whatever happened above
            if p.poll() is None:
                p.kill()
                p.wait()


@contextlib.contextmanager
def _ps_only(task_env: dict):
    """The ps task as a process; the workers' addresses are reserved for servers
    their clients start. Yields the cluster as JSON."""
    from nbcluster.launch.process import free_ports
    ports = free_ports(1 + WORKERS)
    spec = json.dumps({"ps": [f"127.0.0.1:{ports[0]}"],
                       "worker": [f"127.0.0.1:{p}" for p in ports[1:]]})
    proc = subprocess.Popen([sys.executable, "-m", "nbcluster.server", "--cluster", spec,
                             "--job", "ps", "--task", "0", "--exit-with-parent"],
                            cwd=REPO_ROOT, env=task_env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        if read_line(proc, 60.0) is None:
            raise RuntimeError(f"the ps task did not start (rc={proc.poll()})")
        yield spec
    finally:
        stop_proc(proc)


def _task_env() -> dict:
    """What `Cluster.local` gives a task process: its share of the cores for
    BLAS and malloc that keeps freed blocks (the server CLI's mallopt, as tunables)."""
    from nbcluster.launch.process import share_blas_threads
    env = child_env()
    share_blas_threads(env, 1 + WORKERS)
    env["GLIBC_TUNABLES"] += ":" + KEEP_FREED
    return env


def main(hidden: int, in_process: bool = False) -> None:
    if in_process:
        env = _task_env()
        with _ps_only(env) as spec:
            rows = _run_workers(spec, hidden, env, True)
    else:
        with local_cluster({"ps": 1, "worker": WORKERS}) as cluster:
            rows = _run_workers(json.dumps(cluster.spec.as_dict()), hidden, child_env(), False)
    total = WORKERS * (STEPS + WARMUP)
    assert all(r["global_step"] == total for r in rows), rows
    wall = max(r["end"] for r in rows) - min(r["start"] for r in rows)
    common = {"unit": "steps/s", "batch": BATCH, "steps_per_worker": STEPS,
              "server_env": "GLIBC_TUNABLES=glibc.malloc.hugetlb=1",
              "client_hugetlb": client_hugetlb(),
              "mode": "in-process server" if in_process else "separate client process"}
    suffix = "_inproc" if in_process else ""
    emit({"bench": "ps_training", "case": f"mlp_784_{hidden}_10_ps1_worker2{suffix}_aggregate",
          "value": round(WORKERS * STEPS / wall, 1), "wall_s": round(wall, 3),
          "final_eval_loss": round(max(r["eval_loss"] for r in rows), 5),
          "global_step": rows[0]["global_step"], **common})
    for r in rows:
        seconds = r["end"] - r["start"]
        emit({"bench": "ps_training",
              "case": f"mlp_784_{hidden}_10_ps1_worker2{suffix}_w{r['task']}",
              "value": round(STEPS / seconds, 1), "mean_ms": round(seconds / STEPS * 1e3, 3),
              "final_loss": round(r["last_loss"], 5), **common})


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", metavar="CLUSTER_JSON")
    parser.add_argument("--task", type=int, default=0)
    parser.add_argument("--hidden", type=int, default=256, help="hidden units (default 256)")
    parser.add_argument("--in-process-server", action="store_true",
                        help="each worker's server runs in its client's process (TF1's usual "
                             "between-graph setup) instead of a process of its own")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.task, args.hidden, args.in_process_server)
    else:
        main(args.hidden, args.in_process_server)
