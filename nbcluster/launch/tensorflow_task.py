"""A task that is real TensorFlow: `python -m nbcluster.launch.tensorflow_task`.

What `Cluster.local(..., server="tensorflow")` runs for each task instead of
`python -m nbcluster.server`, with the same arguments:

    python -m nbcluster.launch.tensorflow_task --cluster CLUSTER --job JOB --task INDEX
                                               [--config CONFIG] [--exit-with-parent[=PID]]

It serves `tf.distribute.Server(cluster, job, task, config=CONFIG)` until
SIGTERM or its parent's exit. TensorFlow checks no token and speaks no TLS:
its tasks are unauthenticated (docs/security.md). Exit status 2: bad
arguments or TensorFlow not installed (one line on stderr).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading

_PROG = "nbcluster.launch.tensorflow_task"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=_PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", required=True, help="the cluster as JSON")
    parser.add_argument("--job", required=True)
    parser.add_argument("--task", required=True, type=int)
    parser.add_argument("--config", default=None, help="a ConfigProto as protobuf JSON")
    parser.add_argument("--exit-with-parent", nargs="?", type=int, const=0, default=None,
                        metavar="PID")
    return parser


def _watch_parent(stop: threading.Event, expected: int) -> None:
    parent = expected or os.getppid()

    def watch() -> None:
        while not stop.wait(0.5):
            if os.getppid() != parent:  # re-parented: whoever started us is gone
                stop.set()
    if os.getppid() != parent:
        stop.set()
    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if args.exit_with_parent is not None:
        _watch_parent(stop, args.exit_with_parent)
    try:
        import tensorflow as tf
    except ImportError:
        print(f"{_PROG}: error: TensorFlow is not installed here: pip install "
              f"'nbcluster[interop]' (tensorflow-cpu)", file=sys.stderr)
        return 2
    from google.protobuf import json_format
    config = None
    if args.config:
        config = json_format.Parse(args.config, tf.compat.v1.ConfigProto())
    server = tf.distribute.Server(json.loads(args.cluster), job_name=args.job,
                                  task_index=args.task, protocol="grpc", config=config)
    print(f"{_PROG}: /job:{args.job}/task:{args.task} serving TensorFlow "
          f"{tf.__version__} at {server.target}", flush=True)
    while not stop.wait(1.0):
        pass
    sys.stdout.flush()
    os._exit(0)  # TF's server has no clean stop; its threads end with the process


if __name__ == "__main__":
    sys.exit(main())
