"""Wall time of each corpus program (nbcluster/examples/tf1/) on nbcluster and, when
TensorFlow is installed (the `bench` extra), on TensorFlow, alternating the two,
each run the way its docstring says (one process per task, random start order).

Usage: python -m benchmarks.corpus [NAME ...] [--repeats N]
Prints one JSON line per program (medians of the runs that succeeded, the ratio
TF time / nbcluster time, so above 1 means nbcluster is faster), then a table.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys

from nbcluster.examples.corpus import PROGRAMS


def run_once(name: str, tensorflow: bool, seed: int) -> dict:
    argv = [sys.executable, "-m", "nbcluster.examples.run", name, "--seed", str(seed)]
    proc = subprocess.run(argv + (["--tensorflow"] if tensorflow else []),
                          capture_output=True, text=True, timeout=600)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def median_wall(results: list):
    times = [r["wall_s"] for r in results if r.get("ok")]
    return round(statistics.median(times), 2) if times else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=sorted(PROGRAMS))
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    with_tf = importlib.util.find_spec("tensorflow") is not None
    rows = []
    for name in args.names:
        ours, theirs = [], []
        for seed in range(args.repeats):  # alternate: host noise hits both alike
            ours.append(run_once(name, False, seed))
            if with_tf and PROGRAMS[name].tensorflow:
                theirs.append(run_once(name, True, seed))
        row = {"bench": "corpus", "case": name, "nbcluster_s": median_wall(ours),
               "nbcluster_ok": sum(bool(r.get("ok")) for r in ours),
               "tensorflow_s": median_wall(theirs) if theirs else None,
               "tensorflow_ok": sum(bool(r.get("ok")) for r in theirs), "runs": args.repeats}
        if row["nbcluster_s"] and row["tensorflow_s"]:
            row["ratio_tf_over_ours"] = round(row["tensorflow_s"] / row["nbcluster_s"], 2)
        print(json.dumps(row), flush=True)
        rows.append(row)
    print(f"\n{'program':24} {'nbcluster s':>12} {'TF s':>8} {'TF/ours':>8}", file=sys.stderr)
    for r in rows:
        print(f"{r['case']:24} {r['nbcluster_s'] or '-':>12} {r['tensorflow_s'] or '-':>8} "
              f"{r.get('ratio_tf_over_ours', '-'):>8}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
