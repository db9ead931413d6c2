"""`python -m nbcluster.server`: one task of a cluster, run in the foreground.

    python -m nbcluster.server --cluster CLUSTER --job JOB --task INDEX
                               [--config CONFIG] [--protocol grpc] [--exit-with-parent[=PID]]
                               [--checkpoint-dir DIR] [--token-file PATH] [--insecure]
                               [--tls-dir DIR | --tls-cert PEM --tls-key PEM --tls-ca PEM]
    python -m nbcluster.server --from-env [--config CONFIG] [--exit-with-parent[=PID]]

CLUSTER is a JSON object such as '{"ps": ["127.0.0.1:2222"], "worker":
["127.0.0.1:2223", "127.0.0.1:2224"]}' (a sparse job: {"worker": {"1":
"host:port"}}), or the path of a file that holds one. CONFIG is a ConfigProto
in protobuf's JSON mapping ('{"deviceCount": {"CPU": 2}}'), or a path.
`--job` and `--task` may be left out only where the cluster leaves no choice.
`--from-env` takes cluster, job and task from TF_CONFIG (as Kubeflow and
Vertex set it) or else from Slurm's SLURM_* variables (every rank a "worker"
unless NBCLUSTER_SLURM_JOBS='{"ps": 1, "worker": 3}' splits them; ports from
NBCLUSTER_SLURM_PORT_BASE, default 8888); see `nbcluster.server.environment`.
Port 0 in this task's address picks a free port (other tasks cannot know it).
Every RPC must carry the token of `--token-file` (else NBCLUSTER_TOKEN, else
the file NBCLUSTER_TOKEN_FILE names), if there is one; a task that listens
beyond loopback refuses to start without one, and without TLS, unless
`--insecure` (it warns). `--tls-dir DIR` (cert.pem, key.pem, ca.pem; else
NBCLUSTER_TLS_DIR), or the three `--tls-*` files, make the task serve TLS
only; the key file must be 0600. Launchers make and pass all of these.
`--checkpoint-dir` (else NBCLUSTER_CHECKPOINT_DIR, else the working directory)
is the only directory the task's Save/Restore/Merge ops may touch.

Once it serves, it prints exactly one line on stdout, flushed:

    nbcluster.server: serving /job:<job>/task:<index> at grpc://localhost:<port>

(`nbcluster.server.parse_ready_line` reads it; the port is the real one).
SIGTERM or SIGINT stops the gRPC server, frees the port and exits with 0; so
does the parent's death with `--exit-with-parent` (launchers pass it, so a
killed launcher leaves no orphan tasks): on Linux the kernel then sends
SIGTERM (PR_SET_PDEATHSIG), and a poll of the parent pid backs it up. With
`=PID` the task also exits if PID was already gone before it looked.
Exit status 2: bad arguments, one line on stderr ("nbcluster.server: error:
..."); status 1: the server could not start (e.g. its port is in use).
"""
from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import threading
from typing import NoReturn, Optional

from nbcluster import errors
from nbcluster.rpc.grpc_transport import tls_material
from nbcluster.rpc.grpc_transport.tokens import read_token_file
from nbcluster.runtime.malloc_reuse import keep_freed_memory
from nbcluster.server import Server, make_server_def, ready_line
from nbcluster.server.environment import task_from_environment
from nbcluster.server.options import load_cluster, load_config

PROG = "nbcluster.server"
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not argparse's usage block
        self.exit(2, f"{PROG}: error: {message}\n")


def _parser() -> _Parser:
    parser = _Parser(prog=f"python -m {PROG}", description="Runs one task of a cluster.")
    parser.add_argument("--cluster", default=None,
                        help="the cluster as a JSON object, or the path of a JSON file")
    parser.add_argument("--from-env", action="store_true",
                        help="cluster, job and task from TF_CONFIG or Slurm's environment")
    parser.add_argument("--job", default=None, help="this task's job name")
    parser.add_argument("--task", type=int, default=None, help="this task's index in its job")
    parser.add_argument("--config", default=None,
                        help="a ConfigProto as JSON (protobuf's mapping), or a file path")
    parser.add_argument("--protocol", default=None, help='"grpc" (the default and only one)')
    parser.add_argument("--exit-with-parent", nargs="?", type=int, const=0, default=None,
                        metavar="PID", help="stop (status 0) once the process that started "
                        "this one (or PID, which should be it) is gone")
    parser.add_argument("--token-file", default=None, metavar="PATH",
                        help="a 0600 file holding the token every RPC must carry "
                        "(default: $NBCLUSTER_TOKEN, else $NBCLUSTER_TOKEN_FILE)")
    parser.add_argument("--insecure", action="store_true",
                        help="allow listening beyond loopback with no token (warns)")
    parser.add_argument("--tls-dir", default=None, metavar="DIR",
                        help="serve TLS with DIR/cert.pem, DIR/key.pem (0600) and DIR/ca.pem "
                        "(default: $NBCLUSTER_TLS_DIR, else no TLS)")
    for name, what in (("cert", "this task's certificate"), ("key", "its private key (0600)"),
                       ("ca", "the cluster CA's certificate")):
        parser.add_argument(f"--tls-{name}", default=None, metavar="PEM",
                            help=f"{what}, a PEM file (all three, or --tls-dir)")
    parser.add_argument("--checkpoint-dir", default=None, metavar="DIR",
                        help="the only directory checkpoint ops may write or read "
                        "(default: $NBCLUSTER_CHECKPOINT_DIR, else the working directory)")
    return parser


class _StopRequest:
    """A stop request that a signal handler may make: a flag and a self-pipe.

    A handler runs in the main thread between two bytecodes, possibly inside
    code holding a lock, so it takes none: it sets a flag and writes a byte
    (threading.Event.set() there deadlocked on a second signal). Waiters
    select() on the pipe's read end, which is never drained, so once set it
    stays readable.
    """

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self._set = False

    def set(self, *_signal_args) -> None:
        self._set = True
        try:
            os.write(self._write, b"\0")
        except BlockingIOError:  # the pipe is full: it is readable already
            pass

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: Optional[float] = None) -> bool:
        if not self._set:
            select.select([self._read], [], [], timeout)
        return self._set


def _set_parent_death_signal(sig: int) -> None:
    """Asks Linux to send `sig` to this process when its parent dies (a no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, sig, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # the poll below still notices


def _watch_parent(stop: _StopRequest, expected: int) -> None:
    """Sets `stop` once the parent (`expected`, or the current one if 0) is gone.

    The kernel's signal arrives at once; the poll covers what it cannot: a
    parent that died before this process set the signal up.
    """
    _set_parent_death_signal(signal.SIGTERM)  # in the main thread: the kernel keys it there
    parent = expected or os.getppid()
    if os.getppid() != parent:
        stop.set()
        return

    def watch() -> None:
        while not stop.wait(0.5):
            if os.getppid() != parent:  # re-parented: whoever started us is gone
                stop.set()
    threading.Thread(target=watch, name="nbcluster-parent-watch", daemon=True).start()


def _cluster_and_task(args: argparse.Namespace) -> tuple:
    """(cluster, job, task) from --cluster/--job/--task or from --from-env."""
    if args.from_env:
        if args.cluster is not None or args.job is not None or args.task is not None:
            raise ValueError("--from-env takes the cluster, job and task from the "
                             "environment: drop --cluster, --job and --task")
        task = task_from_environment(os.environ)
        if task.rpc_layer not in (None, "", "grpc"):
            raise ValueError(f"the environment asks for rpc_layer {task.rpc_layer!r}; this "
                             f"server speaks 'grpc' only")
        return task.cluster, task.job, task.index
    if args.cluster is None:
        raise ValueError("one of --cluster or --from-env is required")
    return load_cluster(args.cluster), args.job, args.task


def main(argv: Optional[list] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    stop = _StopRequest()
    for sig in _STOP_SIGNALS:
        signal.signal(sig, stop.set)
    if args.exit_with_parent is not None:  # first: a parent may die while we parse
        _watch_parent(stop, args.exit_with_parent)
    keep_freed_memory()  # Server does it too; here before anything is allocated
    try:
        server_def = make_server_def(*_cluster_and_task(args), args.protocol,
                                     load_config(args.config))
    except (ValueError, TypeError) as e:
        parser.error(str(e))
    except errors.OpError as e:
        parser.error(e.message)
    if stop.is_set():  # the parent died, or a signal came, before we served
        _ignore_stop_signals()
        return 0
    try:
        token = None
        if args.token_file is not None:
            try:
                token = read_token_file(args.token_file)
            except (OSError, ValueError) as e:
                parser.error(f"--token-file: {e}")
        server = Server(server_def, checkpoint_dir=args.checkpoint_dir, token=token,
                        insecure=args.insecure, tls=_tls(parser, args))
    except errors.InvalidArgumentError as e:  # e.g. this task's address has no valid port
        parser.error(e.message)
    except errors.OpError as e:
        print(f"{PROG}: error: {e.message}", file=sys.stderr, flush=True)
        return 1
    try:
        print(ready_line(server_def.job_name, server_def.task_index, server.target), flush=True)
        stop.wait()
    finally:
        _ignore_stop_signals()
        server.stop()
    return 0


def _tls(parser: _Parser, args: argparse.Namespace):
    """The `tls=` of the task's Server from --tls-dir or --tls-cert/--tls-key/--tls-ca."""
    files = (args.tls_cert, args.tls_key, args.tls_ca)
    if args.tls_dir is not None:
        if any(files):
            parser.error("--tls-dir and --tls-cert/--tls-key/--tls-ca exclude each other")
        return args.tls_dir
    if not any(files):
        return None
    if not all(files):
        parser.error("--tls-cert, --tls-key and --tls-ca go together")
    try:
        return tls_material.load(*files)
    except (OSError, ValueError) as e:
        parser.error(f"--tls-*: {e}")


def _ignore_stop_signals() -> None:
    """Ignores further stop signals: the stop is under way, and the interpreter
    puts back the default (fatal) action of a handled signal as it finalizes,
    so a late one of a burst would end the process with -SIGTERM, not 0."""
    for sig in _STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


if __name__ == "__main__":
    sys.exit(main())
