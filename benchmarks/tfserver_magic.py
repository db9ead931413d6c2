"""Benchmark: `%%tfserver cluster` for 1 ps + 4 workers, until every task is ready.

Cases (median of REPEATS fresh clusters, in one IPython shell):
  cluster_magic   `%%tfserver cluster` returns with its status table shown, every
                  task answering GetStatus (checked after the clock stops)
  cluster_api     `Cluster.local(ps=1, worker=4)` alone, for the magic's overhead
  stop_magic      `%tfserver stop NAME` until every task process is reaped

Run from the repository root: python -m benchmarks.tfserver_magic
"""
from __future__ import annotations

import time

from benchmarks._common import emit, median

REPEATS = 3
BODY = "ps: 1\nworker: 4\n"


def _row(case: str, values: list, **extra) -> dict:
    return {"bench": "tfserver_magic", "case": case, "value": round(median(values), 3),
            "unit": "s", "min": round(min(values), 3), "n": len(values), "tasks": 5, **extra}


def main() -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    from traitlets.config import Config

    from nbcluster.launch import Cluster

    config = Config()
    config.HistoryManager.enabled = False
    ip = InteractiveShell.instance(config=config)
    ip.run_line_magic("load_ext", "nbcluster.jupyter")
    started, stopped, api = [], [], []
    try:
        for i in range(REPEATS):
            with capture_output() as cap:  # the status table must not mix with JSON rows
                t0 = time.perf_counter()
                ip.run_cell_magic("tfserver", f"cluster bench{i}", BODY)
                started.append(time.perf_counter() - t0)
            cluster = ip.user_ns.get(f"bench{i}")
            if cluster is None:
                raise RuntimeError(f"%%tfserver cluster failed: {cap.stderr.strip()}")
            states = [s.state for s in cluster.status()]
            assert states == ["up"] * 5, states
            with capture_output():
                t0 = time.perf_counter()
                ip.run_line_magic("tfserver", f"stop bench{i}")
                stopped.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            with Cluster.local(ps=1, worker=4) as cluster:
                api.append(time.perf_counter() - t0)
    finally:
        ip.run_line_magic("unload_ext", "nbcluster.jupyter")
    emit(_row("cluster_magic", started))
    emit(_row("cluster_api", api))
    emit(_row("stop_magic", stopped))


if __name__ == "__main__":
    main()
