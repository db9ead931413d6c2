"""Benchmark: seconds from `Cluster.local(ps=1, worker=4)` to every task answering GetStatus.

Cases (median of REPEATS fresh clusters, in this process):
  cluster_local_ready  the call until it returns: 5 task processes spawned,
                       each ready by GetStatus (`nbcluster.launch.Cluster`)
  cluster_restart      `restart("worker", 0)` until that task answers again
  cluster_stop         `stop()` until every task process is reaped

Run from the repository root: python -m benchmarks.cluster_start
"""
from __future__ import annotations

import os
import time

from benchmarks._common import emit, median

REPEATS = 3


def _row(case: str, values: list, **extra) -> dict:
    return {"bench": "cluster_start", "case": case, "value": round(median(values), 3),
            "unit": "s", "min": round(min(values), 3), "n": len(values), "tasks": 5,
            "cpus": os.cpu_count(), **extra}


def main() -> None:
    from nbcluster.launch import Cluster

    Cluster.local(ps=1, worker=4).stop()  # warm .pyc files and the page cache once
    ready, restart, stop = [], [], []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        cluster = Cluster.local(ps=1, worker=4)
        ready.append(time.perf_counter() - t0)
        assert [s.state for s in cluster.status()] == ["up"] * 5
        t0 = time.perf_counter()
        cluster.restart("worker", 0)
        restart.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        cluster.stop()
        stop.append(time.perf_counter() - t0)
    emit(_row("cluster_local_ready", ready))
    emit(_row("cluster_restart", restart, tasks=1))
    emit(_row("cluster_stop", stop))


if __name__ == "__main__":
    main()
