"""Runs every benchmark in one go, so the figures sit side by side in one run.

Each benchmark runs as its own `python -m benchmarks.<name>` subprocess (fresh
process, clean gRPC state). JSON lines go to stdout unchanged (plus one
"context" line first); a compact table goes to stderr at the end.
`transfer` runs twice: the client as started, and the client started with
GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (cases suffixed "+client_hugetlb").

Run from the repository root: python -m benchmarks.run_all [name ...]
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time

from benchmarks._common import REPO_ROOT, child_env

# (module, client hugetlb?)
PLAN = [("latency", False), ("transfer", False), ("transfer", True), ("startup", False),
        ("tensor_codec", False), ("remote_hop", False), ("ps_transfer", False),
        ("mlp_step", False), ("ps_training", False), ("cluster_start", False),
        ("tfserver_magic", False)]
TIMEOUT_S = 180


def _context() -> dict:
    import grpc
    import numpy

    import nbcluster.rpc  # noqa: F401  (sets GRPC_EXPERIMENTS before grpc loads)
    return {"bench": "context", "python": platform.python_version(),
            "grpcio": grpc.__version__, "numpy": numpy.__version__,
            "cpus": os.cpu_count(), "loadavg_1m": round(os.getloadavg()[0], 2),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "GRPC_EXPERIMENTS": os.environ.get("GRPC_EXPERIMENTS")}


def _run(module: str, hugetlb: bool, rows: list) -> None:
    env = child_env(hugetlb)  # hugetlb=False: GLIBC_TUNABLES left as inherited
    proc = subprocess.Popen([sys.executable, "-m", f"benchmarks.{module}"], cwd=REPO_ROOT,
                            env=env, stdout=subprocess.PIPE, text=True)
    t0 = time.perf_counter()
    try:
        for line in proc.stdout:
            line = line.strip()
            if not line:
                continue
            print(line, flush=True)
            try:
                row = json.loads(line)
            except ValueError:
                continue
            row.setdefault("bench", module)
            rows.append(row)
        proc.wait(TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    took = time.perf_counter() - t0
    if proc.returncode:
        err = {"bench": module, "case": "ERROR", "returncode": proc.returncode,
               "seconds": round(took, 1)}
        print(json.dumps(err), flush=True)
        rows.append(err)
    print(f"# {module}{' (client hugetlb)' if hugetlb else ''}: {took:.1f} s",
          file=sys.stderr, flush=True)


def _table(rows: list) -> str:
    out = [f"{'bench':<13}{'case':<38}{'value':>10} {'unit':<6}{'vs TF':>7}  extra"]
    for r in rows:
        if r.get("bench") == "context":
            continue
        if "value" not in r:  # tensor_codec's own format
            extra = " ".join(f"{k}={v}" for k, v in r.items() if k not in ("bench", "case"))
            out.append(f"{r.get('bench', ''):<13}{r.get('case', ''):<38}{'':>10} {'':<6}"
                       f"{'':>7}  {extra}")
            continue
        extra = ""
        if "p90_us" in r:
            extra = f"p90={r['p90_us']}us"
        elif "median_ms" in r:
            extra = f"median={r['median_ms']}ms"
        vs = r.get("ratio_vs_tf", "")
        out.append(f"{r['bench']:<13}{r['case']:<38}{r['value']:>10} {r['unit']:<6}{vs!s:>7}  "
                   f"{extra}")
    return "\n".join(out)


def main() -> None:
    only = set(sys.argv[1:])
    rows = [_context()]
    print(json.dumps(rows[0]), flush=True)
    for module, hugetlb in PLAN:
        if only and module not in only:
            continue
        _run(module, hugetlb, rows)
    print(_table(rows), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
