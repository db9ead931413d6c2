"""Benchmark: nbcluster beside TensorFlow, figure by figure, in one run (issue 12's table).

Each task is its own plain process on 127.0.0.1, started the way a user
starts one (`python benchmarks/vs_tensorflow_task.py ...`: a script that
builds `tf.train.Server(cluster, job, i)` and, on a worker, a
`tf.Session(server.target)` in the same process; a ps runs `server.join()`),
never through `Cluster.local`. The same task code runs on both libraries:
`--impl nb` imports nbcluster, `--impl tf` imports tensorflow.compat.v1, and
neither process imports the other. The two implementations alternate
(which goes first swaps every layout and round); each figure's value is the
median over rounds. Without TensorFlow installed (`pip install
nbcluster[bench]`, i.e. tensorflow-cpu) only nbcluster's figures are printed.
Task processes get this environment unchanged (no thread or malloc tuning: a
user's process gets none), plus PYTHONPATH=<repo root>. The checkout's
nbcluster is byte-compiled first (`compileall`), as pip does on install:
where PYTHONDONTWRITEBYTECODE is set, an editable checkout would otherwise
be compiled again by every process (~30 ms of a server's start).

Figures:
- `ps_training_2w`: aggregate steps/s of the 784->256->10 MLP (batch 128,
  plain SGD, between-graph, variables on the ps) on 1 ps + 2 workers.
- `ps_training_1w`: the same on 1 ps + 1 worker.
- `one_process`: the same model through `tf.Session()`, no server, over
  2,000 steps (300 quick): a training loop's steady state, where the other
  figures' 200 steps would be mostly the first 0.2 s, in which a process's
  MatMuls still choose their way (`runtime/blas_pool_gate.py`).
- `transfer_1MiB`, `transfer_64MiB`: ps -> worker GB/s, a ps variable
  consumed by `identity(v).op` on the worker (1 ps + 1 worker).
- `tiny_grpc`: median µs of a fed `x + 1` (float32[4]) from a client process
  through `tf.Session("grpc://...")` to a server process; op on its task.
- `tiny_hop_ps`: the same from the worker's in-process session, op on the ps.
- `server_start`: ms from `tf.train.Server(...)` to the first result through
  it, in a process that already imported the library and ran a local step;
  `cpu_server_start`: the CPU time that took (all the process's threads);
  `cold_server_start`: ms from spawning that process to the same first result
  (interpreter start, the library's import, the local run, the server start):
  what a task a user, Slurm or Kubernetes starts takes to become useful.
- `cpu_*`, `wakes_*` (with the PS training figures): CPU ms and thread wakes
  (voluntary context switches, every thread) per step of a worker and of the
  ps; on a loaded host these vary far less than wall time.

Each figure prints one JSON line (`nbcluster`, `tensorflow`, `speed_ratio`:
nbcluster's speed over TF's, > 1 means nbcluster is faster, `goal` from the
issue); a table follows on stdout.

Run from the repository root: python -m benchmarks.vs_tensorflow [--quick] [--rounds N]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Optional

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASK = os.path.join(REPO_ROOT, "benchmarks", "vs_tensorflow_task.py")
TIMEOUT_S = 240.0

# figure -> (what, unit, higher is better, the goal for nbcluster ÷ TF)
FIGURES = {
    "ps_training_2w": ("PS training, 1 ps + 2 workers, aggregate", "steps/s", True, 1.5),
    "ps_training_1w": ("PS training, 1 ps + 1 worker", "steps/s", True, 1.5),
    "one_process": ("same model, one process, Session()", "steps/s", True, 1.2),
    "transfer_1MiB": ("ps -> worker transfer, 1 MiB", "GB/s", True, 2.2),
    "transfer_64MiB": ("ps -> worker transfer, 64 MiB", "GB/s", True, 3.0),
    "tiny_grpc": ("tiny run over gRPC, op on the master's task", "us", False, 2.0),
    "tiny_hop_ps": ("tiny run, one hop to a ps", "us", False, 2.0),
    "server_start": ("server start in a warm process, to first result", "ms", False, 1.0),
    "cpu_server_start": ("CPU for that server start, all threads", "ms", False, None),
    "cold_server_start": ("process spawn to that first result", "ms", False, None),
    # CPU time per step, all threads of the process (wall time on a shared host is noisy)
    "cpu_worker_2w": ("CPU per step, a worker of 2", "ms", False, None),
    "cpu_ps_2w": ("CPU per aggregate step, the ps of 2 workers", "ms", False, None),
    "cpu_worker_1w": ("CPU per step, the worker of 1", "ms", False, None),
    "cpu_ps_1w": ("CPU per step, the ps of 1 worker", "ms", False, None),
    # thread wakes (voluntary context switches, all threads) per step: hand-overs cost
    # wall time on a loaded host even where CPU time is low
    "wakes_worker_2w": ("thread wakes per step, a worker of 2", "wakes", False, None),
    "wakes_ps_2w": ("thread wakes per aggregate step, the ps of 2 workers", "wakes", False,
                    None),
    "wakes_worker_1w": ("thread wakes per step, the worker of 1", "wakes", False, None),
    "wakes_ps_1w": ("thread wakes per step, the ps of 1 worker", "wakes", False, None),
}


def _free_ports(n: int) -> list:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class _Tasks:
    """The task processes of one layout; every one is ended by its pid on exit."""

    def __init__(self, impl: str) -> None:
        self.impl = impl
        self.procs: list = []
        env = dict(os.environ)
        env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + env["PYTHONPATH"]
                                         if env.get("PYTHONPATH") else "")
        self.env = env

    def start(self, role: str, **options) -> subprocess.Popen:
        argv = [sys.executable, TASK, "--impl", self.impl, "--role", role]
        for key, value in options.items():
            argv += [f"--{key}", str(value)]
        err = tempfile.TemporaryFile()
        spawned = time.time()  # wall clock: the child reports its own time.time()
        proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=err)
        proc.err, proc.spawned = err, spawned
        self.procs.append(proc)
        return proc

    def result(self, proc: subprocess.Popen, timeout: float = TIMEOUT_S) -> dict:
        """The first JSON object `proc` prints on stdout."""
        deadline = time.monotonic() + timeout
        buf = b""
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while True:
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip().startswith(b"{"):
                        return json.loads(line)
                left = deadline - time.monotonic()
                chunk = os.read(proc.stdout.fileno(), 65536) if left > 0 and sel.select(left) \
                    else b""
                if not chunk:
                    proc.err.seek(0)
                    tail = proc.err.read().decode(errors="replace").strip().splitlines()[-5:]
                    raise RuntimeError(f"{self.impl} task gave no result (rc={proc.poll()}): "
                                       + " | ".join(tail))
                buf += chunk

    def __enter__(self) -> "_Tasks":
        return self

    def __exit__(self, *exc) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.err.close()


def _cluster(workers: int) -> str:
    ports = _free_ports(1 + workers)
    return json.dumps({"ps": [f"127.0.0.1:{ports[0]}"],
                       "worker": [f"127.0.0.1:{p}" for p in ports[1:]]})


def _ps_and_workers(impl: str, workers: int, measure: str, opts: dict) -> list:
    spec = _cluster(workers)
    with _Tasks(impl) as tasks:
        ps = tasks.start("ps", cluster=spec)
        tasks.result(ps)
        procs = [tasks.start("worker", cluster=spec, task=i, measure=measure,
                             steps=opts["steps"], reps=opts["reps"], **{"ps-pid": ps.pid})
                 for i in range(workers)]
        return [tasks.result(p) for p in procs]


def _aggregate(rows: list) -> float:
    train = [r["train"] for r in rows]
    return sum(t["steps"] for t in train) / (max(t["end"] for t in train)
                                             - min(t["start"] for t in train))


def _cpu_ms(rows: list, suffix: str) -> dict:
    """Milliseconds of CPU and thread wakes per step: each worker's (median over
    workers) and the ps's over the training window (first start to last end),
    per aggregate step."""
    train = [r["train"] for r in rows]
    steps = sum(t["steps"] for t in train)
    ps_ns = max(t["ps_cpu_ns"][1] for t in train) - min(t["ps_cpu_ns"][0] for t in train)
    ps_wakes = max(t["ps_wakes"][1] for t in train) - min(t["ps_wakes"][0] for t in train)
    return {f"cpu_worker_{suffix}": statistics.median(t["cpu_ns"] / t["steps"] for t in train)
            / 1e6, f"cpu_ps_{suffix}": ps_ns / steps / 1e6,
            f"wakes_worker_{suffix}": statistics.median(t["wakes"] / t["steps"] for t in train),
            f"wakes_ps_{suffix}": ps_wakes / steps}


def layout_two_workers(impl: str, opts: dict) -> dict:
    rows = _ps_and_workers(impl, 2, "train", opts)
    return {"ps_training_2w": _aggregate(rows), **_cpu_ms(rows, "2w")}


def layout_one_worker(impl: str, opts: dict) -> dict:
    measure = "train" if opts.get("train_only") else "train,transfer,hop"
    (row,) = _ps_and_workers(impl, 1, measure, opts)
    if opts.get("train_only"):
        return {"ps_training_1w": _aggregate([row]), **_cpu_ms([row], "1w")}
    return {"ps_training_1w": _aggregate([row]), **_cpu_ms([row], "1w"),
            "transfer_1MiB": row["transfer"]["1MiB"],
            "transfer_64MiB": row["transfer"]["64MiB"], "tiny_hop_ps": row["hop_us"]}


def layout_one_process(impl: str, opts: dict) -> dict:
    with _Tasks(impl) as tasks:
        return {"one_process": tasks.result(tasks.start("single", steps=opts["single_steps"]))
                ["steps_per_s"]}


def layout_grpc_client(impl: str, opts: dict) -> dict:
    (port,) = _free_ports(1)
    with _Tasks(impl) as tasks:
        tasks.result(tasks.start("serve", cluster=json.dumps({"worker": [f"127.0.0.1:{port}"]})))
        client = tasks.start("client", target=f"grpc://127.0.0.1:{port}", reps=opts["reps"])
        return {"tiny_grpc": tasks.result(client)["tiny_us"]}


def layout_server_start(impl: str, opts: dict) -> dict:
    rows = []
    for _ in range(opts["starts"]):
        (port,) = _free_ports(1)
        with _Tasks(impl) as tasks:
            proc = tasks.start("start", target=f"127.0.0.1:{port}")
            row = tasks.result(proc)
            row["cold_ms"] = (row["first_result_at"] - proc.spawned) * 1e3
            rows.append(row)
    return {"server_start": statistics.median(r["start_ms"] for r in rows),
            "cpu_server_start": statistics.median(r["start_cpu_ms"] for r in rows),
            "cold_server_start": statistics.median(r["cold_ms"] for r in rows)}


LAYOUTS = [layout_two_workers, layout_one_worker, layout_one_process, layout_grpc_client,
           layout_server_start]
# the figures each layout gives, for --figures
LAYOUT_FIGURES = {
    layout_two_workers: {"ps_training_2w", "cpu_worker_2w", "cpu_ps_2w", "wakes_worker_2w",
                         "wakes_ps_2w"},
    layout_one_worker: {"ps_training_1w", "cpu_worker_1w", "cpu_ps_1w", "wakes_worker_1w",
                        "wakes_ps_1w", "transfer_1MiB", "transfer_64MiB", "tiny_hop_ps"},
    layout_one_process: {"one_process"},
    layout_grpc_client: {"tiny_grpc"},
    layout_server_start: {"server_start", "cpu_server_start", "cold_server_start"},
}


def _speed_ratio(figure: str, nb: Optional[float], tf: Optional[float]) -> Optional[float]:
    if nb is None or tf is None or nb <= 0 or tf <= 0:
        return None
    return nb / tf if FIGURES[figure][2] else tf / nb


def _row(figure: str, samples: dict) -> dict:
    values = {impl: (statistics.median(v) if v else None) for impl, v in samples.items()}
    nb, tf = values.get("nb"), values.get("tf")
    ratio = _speed_ratio(figure, nb, tf)
    what, unit, _, goal = FIGURES[figure]
    met = None if ratio is None or goal is None else ratio >= goal
    return {"bench": "vs_tensorflow", "figure": figure, "what": what, "unit": unit,
            "nbcluster": None if nb is None else round(nb, 3),
            "tensorflow": None if tf is None else round(tf, 3),
            "speed_ratio": None if ratio is None else round(ratio, 2), "goal": goal,
            "met": met,
            "samples": {k: [round(x, 3) for x in v] for k, v in samples.items()}}


def _table(rows: list) -> str:
    out = ["| figure | TensorFlow | nbcluster | nbcluster ÷ TF (speed) | goal | met |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        def fmt(v):
            return "—" if v is None else f"{v:.3g}" if v < 10 else f"{v:.0f}"
        ratio = "—" if r["speed_ratio"] is None else f"{r['speed_ratio']:.2f}×"
        met = "—" if r["met"] is None else ("yes" if r["met"] else "no")
        goal = "—" if r["goal"] is None else f"≥ {r['goal']}×"
        out.append(f"| {r['what']} ({r['unit']}) | {fmt(r['tensorflow'])} | "
                   f"{fmt(r['nbcluster'])} | {ratio} | {goal} | {met} |")
    return "\n".join(out)


def _blas_context() -> dict:
    """numpy's BLAS as the task processes load it: a forced OPENBLAS_CORETYPE picks
    its kernels (Haswell's AVX2 sgemm takes ~1.8x SkylakeX's on an AVX-512 host),
    which TF's oneDNN does not use."""
    try:
        import numpy  # noqa: F401 - threadpoolctl sees only loaded libraries
        from threadpoolctl import threadpool_info
    except ImportError:
        return {}
    return {"blas": [f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')}"
                     for i in threadpool_info() if i.get("user_api") == "blas"],
            "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="one round, fewer steps and repetitions (about a minute)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 2; quick 1)")
    parser.add_argument("--no-tf", action="store_true", help="nbcluster only")
    parser.add_argument("--figures", default="",
                        help="comma-separated figures to measure (default all): "
                             + ", ".join(FIGURES) + "; a layout runs if it gives one "
                             "(only PS training asked of the 1-worker layout: it skips the "
                             "transfers and the hop)")
    args = parser.parse_args()
    wanted = set(args.figures.split(",")) - {""} if args.figures else set(FIGURES)
    unknown = wanted - set(FIGURES)
    if unknown:
        parser.error(f"unknown figures {sorted(unknown)}; known: {', '.join(FIGURES)}")
    layouts = [lay for lay in LAYOUTS if LAYOUT_FIGURES[lay] & wanted]
    rounds = args.rounds or (1 if args.quick else 2)
    opts = {"steps": 100 if args.quick else 200, "single_steps": 300 if args.quick else 2000,
            "reps": 100 if args.quick else 300,
            "starts": 2 if args.quick else 3,
            "train_only": not wanted & {"transfer_1MiB", "transfer_64MiB", "tiny_hop_ps"}}
    have_tf = not args.no_tf and importlib.util.find_spec("tensorflow") is not None
    subprocess.run([sys.executable, "-m", "compileall", "-q",
                    os.path.join(REPO_ROOT, "nbcluster")], check=False, stdout=subprocess.DEVNULL)
    impls = ["nb", "tf"] if have_tf else ["nb"]
    print(json.dumps({"bench": "vs_tensorflow", "figure": "context",
                      "python": platform.python_version(), "cpus": os.cpu_count(),
                      "loadavg_1m": round(os.getloadavg()[0], 2), "rounds": rounds, **opts,
                      "tensorflow": have_tf, "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                      **_blas_context()}),
          flush=True)
    samples = {f: {impl: [] for impl in impls} for f in FIGURES}
    for r in range(rounds):
        for i, layout in enumerate(layouts):
            order = impls if (r + i) % 2 == 0 else impls[::-1]
            for impl in order:
                t0 = time.perf_counter()
                try:
                    got = layout(impl, opts)
                except (RuntimeError, ValueError, KeyError) as e:
                    print(f"# {layout.__name__} {impl}: {e}", file=sys.stderr, flush=True)
                    continue
                for figure, value in got.items():
                    samples[figure][impl].append(value)
                print(f"# round {r + 1} {layout.__name__} {impl}: "
                      + ", ".join(f"{k}={v:.4g}" for k, v in got.items())
                      + f" ({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
    rows = [_row(f, samples[f]) for f in FIGURES if samples[f].get("nb") or f in wanted]
    for row in rows:
        print(json.dumps(row), flush=True)
    print(_table(rows), flush=True)


if __name__ == "__main__":
    main()
