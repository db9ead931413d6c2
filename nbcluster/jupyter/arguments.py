"""The %tfserver command line: one argparse subcommand per action, none of them exiting.

argparse normally prints usage and calls sys.exit, which in a kernel is a
SystemExit traceback; here a bad line raises MagicUsageError (one line) and
--help raises HelpShown once the help text is printed.
"""
from __future__ import annotations

import argparse
import shlex
from typing import NoReturn

PROG = "%tfserver"


class MagicUsageError(ValueError):
    """The magic's line does not parse (unknown subcommand, missing or bad option)."""


class HelpShown(Exception):
    """--help printed its text: nothing else to do."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise MagicUsageError(f"{message} (see {self.prog} --help)")

    def exit(self, status: int = 0, message: str = None) -> NoReturn:
        if message:
            raise MagicUsageError(message.strip())
        raise HelpShown()


def _seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0 seconds, not {text!r}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, not {text!r}")
    return value


def build_parser() -> _Parser:
    """The parser of every %tfserver line (the cell magic's too)."""
    parser = _Parser(prog=PROG, description="Start, inspect and stop nbcluster servers and "
                     "clusters from this kernel.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    start = sub.add_parser("start", help="start a server in this kernel, bound to `server`",
                           description="Starts a server in this kernel and binds it to "
                           "`server` (or --name), so tf.Session(server.target) uses it. "
                           "Without --cluster: a one-task local server, as "
                           "tf.distribute.Server.create_local_server().")
    start.add_argument("--cluster", help="the cluster: JSON text, a JSON file or the name "
                       "of a variable holding a dict or ClusterSpec")
    start.add_argument("--job", help="this server's job in --cluster")
    start.add_argument("--task", type=int, help="this server's task index in its job")
    start.add_argument("--config", help="a ConfigProto: JSON text, a JSON file or a variable")
    start.add_argument("--name", default="server",
                       help="the variable to bind the Server to (server)")

    cluster = sub.add_parser("cluster", help="(cell magic) start the cluster the cell "
                             "describes and bind it to NAME",
                             description="%%tfserver cluster NAME: the cell body gives job "
                             "counts ('ps: 1' / 'worker: 2' lines or JSON) or addresses "
                             "('worker: [host:port, ...]'). Tasks run as local processes, "
                             "over ssh on --ssh hosts (round robin, ps first), or as srun "
                             "steps in one Slurm allocation (--slurm).")
    cluster.add_argument("name", metavar="NAME", help="the variable to bind the Cluster to")
    cluster.add_argument("--ssh", metavar="HOSTS", nargs="?", const="",
                         help="comma-separated hosts to ssh to; alone, with addresses in the "
                         "cell: each address's own host")
    cluster.add_argument("--user", help="ssh user")
    cluster.add_argument("--key", help="ssh private key file")
    cluster.add_argument("--ssh-port", type=_positive, default=22, help="ssh port (22)")
    cluster.add_argument("--python", default=None,
                         help="the python on the ssh hosts (python3) or Slurm nodes (this "
                         "kernel's)")
    cluster.add_argument("-o", "--ssh-option", action="append", default=[], metavar="OPTION",
                         help="an ssh -o option, e.g. StrictHostKeyChecking=accept-new "
                         "(repeatable)")
    cluster.add_argument("--server", choices=("nbcluster", "tensorflow"), default="nbcluster",
                         help="what each local task runs: nbcluster's server, or real "
                         "TensorFlow's tf.distribute.Server (needs TensorFlow installed)")
    slurm = cluster.add_argument_group("Slurm (with --slurm)")
    slurm.add_argument("--slurm", action="store_true",
                       help="ask Slurm for one allocation holding every task (sbatch), each "
                       "task an srun step in it")
    slurm.add_argument("--partition", help="sbatch --partition")
    slurm.add_argument("--time", help="sbatch --time: minutes or [D-]HH:MM:SS")
    slurm.add_argument("--nodes", type=_positive, help="sbatch --nodes")
    slurm.add_argument("--cpus-per-task", type=_positive, help="sbatch --cpus-per-task")
    slurm.add_argument("--gpus-per-task", type=_positive, help="sbatch --gpus-per-task")
    slurm.add_argument("--sbatch-option", action="append", default=[], metavar="OPTION",
                       help="another sbatch option, e.g. --mem-per-cpu=2G (repeatable; "
                       "write it as --sbatch-option=--mem-per-cpu=2G)")
    slurm.add_argument("--no-wait", action="store_true",
                       help="return once submitted: the cluster shows its Slurm job and why "
                       "it pends; NAME.wait_ready() starts the tasks")
    cluster.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                         help="an environment variable for every task, e.g. "
                         "PYTHONPATH=/opt/code (repeatable)")
    cluster.add_argument("--config", help="a ConfigProto for every task: JSON text, a JSON "
                         "file or a variable")
    cluster.add_argument("--timeout", type=_seconds, default=60.0,
                         help="seconds for all tasks to be ready (60)")

    sub.add_parser("list", help="list the clusters and servers of this kernel",
                   description="Lists the clusters and servers started in this kernel.")
    status = sub.add_parser("status", help="status table of a cluster (all without NAME)",
                            description="Shows each task's state, address, process and "
                            "devices.")
    status.add_argument("name", metavar="NAME", nargs="?")

    logs = sub.add_parser("logs", help="last lines of one task's output",
                          description="Prints the last lines of one task's stdout+stderr.")
    logs.add_argument("name", metavar="NAME")
    logs.add_argument("task", metavar="JOB:TASK", help="e.g. worker:0")
    logs.add_argument("--tail", type=_positive, default=50, help="lines (50)")

    restart = sub.add_parser("restart", help="restart one task of a cluster",
                             description="Restarts one task on its address; prints its target.")
    restart.add_argument("name", metavar="NAME")
    restart.add_argument("task", metavar="JOB:TASK", help="e.g. worker:0")

    stop = sub.add_parser("stop", help="stop a cluster or server (or --all)",
                          description="Stops a cluster's tasks, or an in-kernel server (by "
                          "its job:task or its variable).")
    stop.add_argument("name", metavar="NAME", nargs="?")
    stop.add_argument("--all", action="store_true", help="stop everything started here")

    connect = sub.add_parser("connect", help="bind NAME to servers started elsewhere",
                             description="Binds NAME to running servers (owns no process: "
                             "stop forgets them, kills nothing). Each TARGET is "
                             "grpc://host:port (its job and task are asked), "
                             "job:task=grpc://host:port, or a cluster JSON object.")
    connect.add_argument("name", metavar="NAME")
    connect.add_argument("targets", metavar="TARGET", nargs="+")
    connect.add_argument("--timeout", type=_seconds, default=10.0,
                         help="seconds for every server to answer (10)")
    return parser


def split_line(line: str) -> list:
    """shlex.split, except that a bare {...} (a JSON object, well formed or not) stays
    one word, so `--cluster {"ps": ["h:1"]}` needs no quoting.

    Raises:
      MagicUsageError: unbalanced quotes.
    """
    pieces: dict = {}
    out, i = [], 0
    while i < len(line):
        if line[i] == "{" and (i == 0 or line[i - 1].isspace()):
            end = _object_end(line, i)
            key = f"\x00{len(pieces)}\x00"
            pieces[key] = line[i:end]
            out.append(f" {key} ")
            i = end
            continue
        out.append(line[i])
        i += 1
    try:
        words = shlex.split("".join(out))
    except ValueError as e:
        raise MagicUsageError(f"{e}: {line!r}") from None
    return [pieces.get(word, word) for word in words]


def _object_end(line: str, start: int) -> int:
    """Where the {...} opened at `start` closes (braces in JSON strings ignored);
    the end of the line if it never does."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(line)):
        c = line[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(line)


def parse_line(parser: _Parser, line: str) -> argparse.Namespace:
    """The parsed %tfserver line.

    Raises:
      MagicUsageError: a bad line. HelpShown: help was printed.
    """
    return parser.parse_args(split_line(line))
