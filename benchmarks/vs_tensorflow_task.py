"""One task process of benchmarks/vs_tensorflow.py, as a user's script would run it.

`--impl nb` imports nbcluster as tf, `--impl tf` imports tensorflow.compat.v1
as tf (graph mode, TF1 behaviour); neither process imports the other library,
and the graphs below are the same code for both. Roles:

- `ps`: `server = tf.train.Server(cluster, "ps", 0)`, then `server.join()`.
- `worker`: `server = tf.train.Server(cluster, "worker", i)` and
  `tf.Session(server.target)` in this process; runs the measurements named
  by `--measure` (train, transfer, hop) and prints one JSON line.
- `single`: the MLP trained through `tf.Session()`, no server.
- `serve`: a one-task cluster's server only (for `client`).
- `client`: `tf.Session("grpc://...")` of a `serve` process: the tiny run.
- `start`: in a warm process (library imported, one local run done), the
  time from `tf.train.Server(...)` to the first result through it, and the
  wall-clock time of that result (the parent knows when it spawned us).

Every process prints exactly one JSON line of results on stdout (a ps or a
serving task prints its readiness line and then blocks until killed).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np

BATCH, INPUTS, HIDDEN, CLASSES, LR = 128, 784, 256, 10, 0.1
WARMUP = 5


def _load(impl: str):
    if impl == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow.compat.v1 as tf
        tf.disable_v2_behavior()
        tf.logging.set_verbosity(tf.logging.ERROR)
        return tf
    import nbcluster as tf
    return tf


def _batches(n: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    protos = (rng.random((CLASSES, INPUTS)) < 0.25).astype(np.float32)
    out = []
    for _ in range(n):
        label = rng.integers(0, CLASSES, BATCH)
        x = protos[label] + rng.normal(size=(BATCH, INPUTS)).astype(np.float32)
        out.append((x.astype(np.float32), np.eye(CLASSES, dtype=np.float32)[label]))
    return out


def _mlp(tf, global_step):
    """The 784 -> 256 -> 10 MLP, softmax cross-entropy, plain SGD (as TF1's MNIST example)."""
    x = tf.placeholder(tf.float32, [None, INPUTS], name="x")
    labels = tf.placeholder(tf.float32, [None, CLASSES], name="labels")
    hid_w = tf.Variable(tf.truncated_normal([INPUTS, HIDDEN], stddev=1 / math.sqrt(INPUTS),
                                            seed=1), name="hid_w")
    hid_b = tf.Variable(tf.zeros([HIDDEN]), name="hid_b")
    sm_w = tf.Variable(tf.truncated_normal([HIDDEN, CLASSES], stddev=1 / math.sqrt(HIDDEN),
                                           seed=2), name="sm_w")
    sm_b = tf.Variable(tf.zeros([CLASSES]), name="sm_b")
    hid = tf.nn.relu(tf.matmul(x, hid_w) + hid_b)
    logits = tf.matmul(hid, sm_w) + sm_b
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels,
                                                                     logits=logits))
    train = tf.train.GradientDescentOptimizer(LR).minimize(loss, global_step=global_step)
    return x, labels, loss, train


def cpu_ns(pid: int) -> int:
    """CPU time (ns) process `pid` has used, all its live threads summed
    (schedstat: nanoseconds, where /proc/<pid>/stat counts 10 ms ticks)."""
    total = 0
    base = f"/proc/{pid}/task"
    for tid in os.listdir(base):
        try:
            with open(f"{base}/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended meanwhile
    return total


def wakes(pid: int) -> int:
    """Voluntary context switches of process `pid`, all its live threads summed
    (each is a thread that blocked and was woken again; the process's own
    status line counts its main thread only)."""
    total = 0
    base = f"/proc/{pid}/task"
    for tid in os.listdir(base):
        try:
            with open(f"{base}/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended meanwhile
    return total


def _wait_until(predicate, what: str) -> None:
    deadline = time.monotonic() + 120
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached in 120 s")
        time.sleep(0.01)


def _train(tf, target: str, cluster, task: int, steps: int, ps_pid: int) -> dict:
    """Between-graph training on the ps; the workers start together (a counter on the ps)."""
    workers = cluster.num_tasks("worker")
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(
                worker_device=f"/job:worker/task:{task}", cluster=cluster)):
            step = tf.train.get_or_create_global_step()
            x, labels, loss, train = _mlp(tf, step)
            ready = tf.Variable(0, trainable=False, name="bench_ready")
            mark_ready = ready.assign_add(1)
        inited = [tf.is_variable_initialized(v) for v in tf.global_variables()]
        init = tf.global_variables_initializer()
        with tf.Session(target) as s:
            if task == 0:
                s.run(init)
            _wait_until(lambda: all(s.run(inited)), "variables initialized")
            feeds = [{x: bx, labels: by} for bx, by in _batches(steps + WARMUP, seed=task)]
            for feed in feeds[:WARMUP]:
                s.run(train, feed)
            s.run(mark_ready)
            _wait_until(lambda: s.run(ready) >= workers, "the start barrier")
            cpu0 = (cpu_ns(os.getpid()), cpu_ns(ps_pid) if ps_pid else 0)
            wakes0 = (wakes(os.getpid()), wakes(ps_pid) if ps_pid else 0)
            start = time.time()
            for feed in feeds[WARMUP:]:
                s.run(train, feed)
            end = time.time()
            cpu1 = (cpu_ns(os.getpid()), cpu_ns(ps_pid) if ps_pid else 0)
            wakes1 = (wakes(os.getpid()), wakes(ps_pid) if ps_pid else 0)
            last = float(s.run(loss, feeds[-1]))
    return {"start": start, "end": end, "steps": steps, "loss": last,
            "cpu_ns": cpu1[0] - cpu0[0], "ps_cpu_ns": (cpu0[1], cpu1[1]),
            "wakes": wakes1[0] - wakes0[0], "ps_wakes": (wakes0[1], wakes1[1])}


def _transfer(tf, target: str, sizes: list, reps: int) -> dict:
    """ps -> worker GB/s: a variable on the ps consumed by identity(v).op on the worker."""
    out = {}
    for mib in sizes:
        n = mib * 2 ** 20 // 4
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(tf.zeros([n], tf.float32), name=f"blob{mib}")
            with tf.device("/job:worker/task:0"):
                pull = tf.identity(v).op
            with tf.Session(target) as s:
                s.run(v.initializer)
                times = []
                for i in range(reps + 2):
                    t0 = time.perf_counter()
                    s.run(pull)
                    if i >= 2:
                        times.append(time.perf_counter() - t0)
        out[f"{mib}MiB"] = n * 4 / statistics.median(times) / 1e9
    return out


def _tiny(tf, target: str, device, reps: int) -> float:
    """Median µs of a fed `x + 1` on float32[4], placed on `device` (None: the master's)."""
    with tf.Graph().as_default():
        with tf.device(device):
            x = tf.placeholder(tf.float32, [4])
            y = x + 1
        feed = {x: np.arange(4, dtype=np.float32)}
        with tf.Session(target) as s:
            for _ in range(20):
                s.run(y, feed)
            times = []
            for _ in range(reps):
                t0 = time.perf_counter()
                s.run(y, feed)
                times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def _single(tf, steps: int) -> dict:
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        x, labels, loss, train = _mlp(tf, step)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            feeds = [{x: bx, labels: by} for bx, by in _batches(steps + WARMUP, seed=0)]
            for feed in feeds[:WARMUP]:
                s.run(train, feed)
            start = time.perf_counter()
            for feed in feeds[WARMUP:]:
                s.run(train, feed)
            seconds = time.perf_counter() - start
    return {"steps_per_s": steps / seconds}


def _start(tf, address: str) -> dict:
    with tf.Graph().as_default():  # warm: the library imported and one local run done
        x = tf.placeholder(tf.float32, [4])
        y = x + 1
        feed = {x: np.arange(4, dtype=np.float32)}
        with tf.Session() as s:
            s.run(y, feed)
        # CPU time too, all the process's threads (exited ones included): on a
        # loaded host the wall time is mostly waiting for a core
        t0, c0 = time.perf_counter(), time.process_time()
        server = tf.train.Server(tf.train.ClusterSpec({"worker": [address]}),
                                 job_name="worker", task_index=0)
        with tf.Session(server.target) as s:
            s.run(y, feed)
        took, cpu = time.perf_counter() - t0, time.process_time() - c0
        first_result_at = time.time()
    return {"ms": took * 1e3, "cpu_ms": cpu * 1e3, "at": first_result_at, "server": server}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--impl", choices=("nb", "tf"), required=True)
    p.add_argument("--role", required=True,
                   choices=("ps", "worker", "single", "serve", "client", "start"))
    p.add_argument("--cluster", default="{}")
    p.add_argument("--task", type=int, default=0)
    p.add_argument("--measure", default="train")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--target", default="")
    p.add_argument("--ps-pid", type=int, default=0, help="the ps process, for its CPU time")
    args = p.parse_args()
    tf = _load(args.impl)
    cluster = tf.train.ClusterSpec(json.loads(args.cluster)) if args.cluster != "{}" else None
    result: dict = {"impl": args.impl, "role": args.role, "task": args.task}
    if args.role in ("ps", "serve"):
        job = "ps" if args.role == "ps" else "worker"
        server = tf.train.Server(cluster, job_name=job, task_index=0)
        print(json.dumps({"ready": server.target}), flush=True)
        server.join()
        return
    if args.role == "worker":
        server = tf.train.Server(cluster, job_name="worker", task_index=args.task)
        for what in args.measure.split(","):
            if what == "train":
                result["train"] = _train(tf, server.target, cluster, args.task, args.steps,
                                         args.ps_pid)
            elif what == "transfer":
                result["transfer"] = _transfer(tf, server.target, [1, 64], max(3, args.reps // 20))
            elif what == "hop":
                result["hop_us"] = _tiny(tf, server.target, "/job:ps/task:0", args.reps)
    elif args.role == "single":
        result.update(_single(tf, args.steps))
    elif args.role == "client":
        result["tiny_us"] = _tiny(tf, args.target, None, args.reps)
    elif args.role == "start":
        started = _start(tf, args.target)
        result["start_ms"], result["start_cpu_ms"] = started["ms"], started["cpu_ms"]
        result["first_result_at"] = started["at"]
    print(json.dumps(result), flush=True)
    sys.stdout.flush()
    os._exit(0)  # a TF server cannot be stopped; nothing is left to flush


if __name__ == "__main__":
    main()
