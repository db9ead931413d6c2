"""Benchmark: start-up times, measured from fresh `python -c` subprocesses.

Cases (median of several fresh processes; wall time includes interpreter start):
  first_result    process start -> first result of a tiny Session("").run
                  printed on stdout (TensorFlow 2.21 yardstick: 2.5 s)
  first_result_exit  the same, until the process has exited
  server_target   process start -> create_local_server() printed its target
                  (child env has GLIBC_TUNABLES=glibc.malloc.hugetlb=1)
  import_only     `import nbcluster` alone, timed inside the child
  python_bare     `python -c pass`, for reference (interpreter floor)

Run from the repository root: python -m benchmarks.startup
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time

from benchmarks._common import (
    REPO_ROOT,
    SERVER_SCRIPT,
    child_env,
    emit,
    median,
    read_line,
    stop_proc,
)

TF_FIRST_RESULT_S = 2.5
REPEATS = 5

FIRST_RESULT = (
    "import nbcluster as tf\n"
    "g = tf.Graph()\n"
    "with g.as_default():\n"
    "    y = tf.constant(1.0) + 1.0\n"
    "    with tf.Session('') as sess:\n"
    "        print(sess.run(y), flush=True)\n"
)
IMPORT_ONLY = (
    "import time\n"
    "t0 = time.perf_counter()\n"
    "import nbcluster\n"
    "print(time.perf_counter() - t0, flush=True)\n"
)


def _spawn(script: str, hugetlb: bool, err) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script], env=child_env(hugetlb),
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=err)


def _first_line(script: str, hugetlb: bool = False, wait_exit: bool = True):
    """(seconds to first stdout line, seconds to exit or None, the line)."""
    err = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    proc = _spawn(script, hugetlb, err)
    try:
        line = read_line(proc, 30.0)
        t_line = time.perf_counter() - t0
        if line is None:
            proc.poll()
            err.seek(0)
            tail = err.read()[-2000:].decode(errors="replace")
            raise RuntimeError(f"no output from child within 30 s (rc={proc.returncode}); "
                               f"stderr tail:\n{tail}")
        t_exit = None
        if wait_exit:
            proc.wait(30)
            t_exit = time.perf_counter() - t0
        return t_line, t_exit, line
    finally:
        stop_proc(proc)
        err.close()


def _row(case: str, values, unit="s", **extra) -> dict:
    return {"bench": "startup", "case": case, "value": round(median(values), 3),
            "unit": unit, "min": round(min(values), 3), "n": len(values), **extra}


def main() -> None:
    bare = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=child_env(False), check=True)
        bare.append(time.perf_counter() - t0)

    _first_line(FIRST_RESULT)  # warm the page cache / .pyc files once
    first, first_exit = [], []
    for _ in range(REPEATS):
        t_line, t_exit, line = _first_line(FIRST_RESULT)
        assert line.strip() == "2.0", line
        first.append(t_line)
        first_exit.append(t_exit)
    med = median(first)
    emit({**_row("first_result", first), "tf_2_21_s": TF_FIRST_RESULT_S,
          "ratio_vs_tf": round(med / TF_FIRST_RESULT_S, 2)})
    emit(_row("first_result_exit", first_exit))

    server = []
    for _ in range(REPEATS):
        t_line, _, line = _first_line(SERVER_SCRIPT, hugetlb=True, wait_exit=False)
        assert line.startswith("grpc://"), line
        server.append(t_line)
    emit(_row("server_target", server, server_env="GLIBC_TUNABLES=glibc.malloc.hugetlb=1"))

    imports = []
    for _ in range(REPEATS):
        _, _, line = _first_line(IMPORT_ONLY)
        imports.append(float(line))
    emit(_row("import_only", imports))
    emit(_row("python_bare", bare))


if __name__ == "__main__":
    main()
