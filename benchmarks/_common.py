"""Shared helpers for the benchmarks: JSON output, timing, subprocess servers.

Subprocess servers get this process's environment plus PYTHONPATH=<repo root>
(so they import this checkout) and GLIBC_TUNABLES=glibc.malloc.hugetlb=1, as
PERFORMANCE.md recommends for task processes. GRPC_EXPERIMENTS is left to the
package itself.
"""
from __future__ import annotations

import contextlib
import json
import os
import selectors
import statistics
import subprocess
import sys
import time
from typing import Iterator, List, Optional, Tuple

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HUGETLB = "glibc.malloc.hugetlb=1"

SERVER_SCRIPT = (
    "import sys\n"
    "import nbcluster as tf\n"
    "server = tf.train.Server.create_local_server()\n"
    "print(server.target, flush=True)\n"
    "server.join()\n"
)

# A bare gRPC echo server with nbcluster's options and GRPC_EXPERIMENTS: the
# floor one unary RPC costs on this host, for comparison with a whole `run`.
RAW_ECHO_SCRIPT = (
    "import nbcluster.rpc\n"  # sets GRPC_EXPERIMENTS before grpc loads
    "from concurrent.futures import ThreadPoolExecutor\n"
    "import grpc\n"
    "from nbcluster.rpc.grpc_transport.channels import SERVER_OPTIONS\n"
    "h = grpc.method_handlers_generic_handler('bench.Echo', {'Echo': "
    "grpc.unary_unary_rpc_method_handler(lambda req, ctx: req)})\n"
    "s = grpc.server(ThreadPoolExecutor(max_workers=8), handlers=[h], options=SERVER_OPTIONS)\n"
    "port = s.add_insecure_port('localhost:0')\n"
    "s.start()\n"
    "print(f'grpc://localhost:{port}', flush=True)\n"
    "s.wait_for_termination()\n"
)


def emit(row: dict) -> None:
    print(json.dumps(row), flush=True)


def child_env(hugetlb: bool = True) -> dict:
    env = dict(os.environ)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + path if path else "")
    if hugetlb:
        tun = env.get("GLIBC_TUNABLES", "")
        if HUGETLB not in tun:
            env["GLIBC_TUNABLES"] = (tun + ":" if tun else "") + HUGETLB
    return env


def client_hugetlb() -> bool:
    """Whether *this* process started with malloc hugetlb (only acts at start)."""
    return HUGETLB in os.environ.get("GLIBC_TUNABLES", "")


def read_line(proc: subprocess.Popen, timeout: float) -> Optional[str]:
    """First stdout line of proc within timeout seconds (None on timeout/EOF)."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    buf = b""
    fd = proc.stdout.fileno()
    try:
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            buf += chunk
    finally:
        sel.close()
    return buf.split(b"\n", 1)[0].decode()


def stop_proc(proc: subprocess.Popen) -> None:
    """Ends one subprocess we started, by its pid: SIGTERM, then SIGKILL."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    for f in (proc.stdout, proc.stderr):
        if f is not None:
            f.close()


@contextlib.contextmanager
def subprocess_server(timeout: float = 30.0, script: str = SERVER_SCRIPT) -> Iterator[Tuple[str, subprocess.Popen, float]]:
    """Starts `create_local_server()` in a child; yields (target, proc, start_s)."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", script], env=child_env(),
                            cwd=REPO_ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        target = read_line(proc, timeout)
        elapsed = time.perf_counter() - start
        if not target or not target.startswith("grpc://"):
            raise RuntimeError(f"subprocess server gave no target in {timeout}s "
                               f"(got {target!r}, rc={proc.poll()})")
        yield target, proc, elapsed
    finally:
        stop_proc(proc)


def percentile(values: List[float], q: float) -> float:
    vals = sorted(values)
    if not vals:
        return float("nan")
    k = (len(vals) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (k - lo)


def median(values: List[float]) -> float:
    return statistics.median(values)


@contextlib.contextmanager
def local_cluster(jobs: dict, timeout: float = 60.0):
    """A `Cluster.local` of task processes (each `python -m nbcluster.server`), with
    malloc hugetlb in the tasks; every task is stopped by pid on exit."""
    from nbcluster.launch import Cluster
    tunables = child_env(hugetlb=True).get("GLIBC_TUNABLES", "")
    with Cluster.local(jobs=jobs, env={"GLIBC_TUNABLES": tunables}, timeout=timeout) as cluster:
        yield cluster


def timed(fn, iters: int, time_cap_s: float, warmup: int = 1) -> List[float]:
    """Per-call seconds of `fn()` after `warmup` calls, capped at `time_cap_s` in all."""
    for _ in range(warmup):
        fn()
    times: List[float] = []
    deadline = time.perf_counter() + time_cap_s
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        times.append(t1 - t0)
        if t1 > deadline:
            break
    return times
