"""%tfserver and %%tfserver: a thin adapter from magic lines to Cluster, Server and the registry.

Rule: an expected failure (bad input, a task that will not start, a host that
does not answer) raises TfServerError, which IPython shows as one line,
`tfserver: error: ...` (the cell is red, Run All stops); anything else
propagates with its traceback, since it is a bug.
"""
from __future__ import annotations

import keyword

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display

from nbcluster import errors
from nbcluster.jupyter.arguments import HelpShown, MagicUsageError, build_parser, parse_line
from nbcluster.jupyter.cluster_body import (
    parse_cluster_body,
    parse_targets,
    parse_task,
    resolve_cluster,
    resolve_config,
)
from nbcluster.jupyter.failures import TfServerError, dead_tasks, one_line
from nbcluster.jupyter.tfserver_registry import Registry
from nbcluster.launch import Cluster, LaunchError
from nbcluster.launch.status import task_of
from nbcluster.server import Server, make_server_def

EXPECTED_ERRORS = (ValueError, TypeError, TimeoutError, OSError, errors.OpError, LaunchError)


def _check_name(name: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"bad name {name!r}: it names the variable bound to the cluster or "
                         f"server, so it must be a Python identifier")
    return name


@magics_class
class TfServerMagics(Magics):
    """The %tfserver magics of one shell; `registry` holds what they started."""

    def __init__(self, shell) -> None:
        super().__init__(shell)
        self.registry = Registry()
        self._parser = build_parser()

    @line_cell_magic
    def tfserver(self, line: str, cell: str = None) -> None:
        """Start and manage nbcluster servers: `%tfserver --help` lists the commands.

            %tfserver start [--cluster C --job J --task N]   a server in this kernel
            %%tfserver cluster NAME [--ssh HOSTS|--slurm] ... start the cluster in the cell
            %tfserver list | status [NAME] | logs NAME job:task [--tail N]
            %tfserver restart NAME job:task | stop NAME|--all
            %tfserver connect NAME grpc://host:port ...       servers started elsewhere
        """
        try:
            args = parse_line(self._parser, line)
            if (cell is not None) != (args.command == "cluster"):
                raise MagicUsageError(
                    "only `cluster` takes a cell body" if cell is not None else
                    "`cluster` needs a cell body: %%tfserver cluster NAME, then lines such "
                    "as 'ps: 1' and 'worker: 2'")
            getattr(self, f"_{args.command}")(args, cell)
        except HelpShown:
            pass
        except EXPECTED_ERRORS as e:
            # a runtime error may come from a task that died: say which, and the fix
            hints = dead_tasks(self.registry.entries()) if isinstance(e, errors.OpError) else ()
            raise TfServerError(one_line(e), hints) from e

    # -- subcommands -------------------------------------------------------
    def _start(self, args, cell) -> None:
        config = resolve_config(args.config, self.shell.user_ns)
        if args.cluster is None:
            if args.job is not None or args.task is not None:
                raise MagicUsageError("--job and --task need --cluster")
            server_def = None
            task = ("localhost", 0)
        else:
            spec = resolve_cluster(args.cluster, self.shell.user_ns)
            server_def = make_server_def(spec, args.job, args.task, config=config)
            task = (server_def.job_name, server_def.task_index)
        name = f"{task[0]}:{task[1]}"
        variable = _check_name(args.name)
        self.registry.ensure_free(name)  # the same task twice in one kernel
        server = Server.create_local_server(config) if server_def is None else Server(
            server_def)
        self.registry.add(name, "server", server, task)
        self.shell.user_ns[variable] = server
        print(f"{name} serving at {server.target} (in this kernel: {variable}; "
              f"tf.Session({variable}.target))")

    def _cluster(self, args, cell) -> None:
        name = _check_name(args.name)
        self.registry.ensure_free(name)
        request = parse_cluster_body(cell)
        options = dict(config=resolve_config(args.config, self.shell.user_ns),
                       timeout=args.timeout, name=name, env=_env(args.env),
                       devices=request.devices)
        slurm_only = [flag for flag, value in _slurm_options(args).items()
                      if value not in (None, ())] + (["no_wait"] if args.no_wait else [])
        if slurm_only and not args.slurm:
            raise MagicUsageError(f"--{slurm_only[0].replace('_', '-')} needs --slurm")
        if args.server != "nbcluster" and (args.slurm or args.ssh is not None):
            raise MagicUsageError("--server tensorflow starts local tasks only (not with --ssh "
                                  "or --slurm)")
        if args.slurm:
            if args.ssh is not None:
                raise MagicUsageError("give --ssh or --slurm, not both")
            self._bind(name, "slurm", _slurm_cluster(request, args, options))
        elif args.ssh is None:
            self._bind(name, "local", _local_cluster(request, args, options))
        else:
            self._bind(name, "ssh", _ssh_cluster(request, args, options))

    def _connect(self, args, cell) -> None:
        name = _check_name(args.name)
        self.registry.ensure_free(name)
        known, unknown = parse_targets(args.targets)
        for address in unknown:
            task = task_of(address, args.timeout)
            if task in known:
                raise ValueError(f"{address} and {known[task]} are both "
                                 f"/job:{task[0]}/task:{task[1]}")
            known[task] = address
        spec: dict = {}
        for (job, index), address in sorted(known.items()):
            spec.setdefault(job, {})[index] = address
        self._bind(name, "connected", Cluster.connect(spec, timeout=args.timeout, name=name))

    def _bind(self, name: str, kind: str, cluster) -> None:
        self.registry.add(name, kind, cluster)
        self.shell.user_ns[name] = cluster
        display(cluster)

    def _list(self, args, cell) -> None:
        print(self.registry.table())

    def _status(self, args, cell) -> None:
        entries = [self._entry(args.name)] if args.name else self.registry.entries()
        if not entries:
            print(self.registry.table())
        for entry in entries:
            if entry.kind == "server":
                print(f"{entry.name}: serving at {entry.target} in this kernel")
            else:
                display(entry.obj)

    def _logs(self, args, cell) -> None:
        cluster, (job, index) = self._cluster_task(args)
        if self.registry.find(cluster).kind == "connected":
            raise ValueError(f"{args.name} was connected to, not started here: its tasks' "
                             f"output is wherever they were started")
        text = cluster.logs(job, index, tail=args.tail)
        print(text if text.endswith("\n") or not text else text + "\n", end="")

    def _restart(self, args, cell) -> None:
        cluster, (job, index) = self._cluster_task(args)
        print(f"{args.name} {job}:{index} restarted at {cluster.restart(job, index)}")

    def _stop(self, args, cell) -> None:
        if args.all == (args.name is not None):
            raise MagicUsageError("give NAME or --all (see %tfserver stop --help)")
        if args.all:
            names = self.registry.stop_all()
            print(f"stopped {', '.join(names)}" if names else "nothing to stop")
            return
        entry = self.registry.stop(self._entry(args.name).name)
        print(f"stopped {entry.name}")

    # -- lookups -----------------------------------------------------------
    def _entry(self, name: str):
        """The registry entry called `name`, or held by the user variable `name`."""
        if name not in self.registry and name.isidentifier():
            entry = self.registry.find(self.shell.user_ns.get(name, self))
            if entry is not None:
                return entry
        return self.registry.get(name)

    def _cluster_task(self, args) -> tuple:
        entry = self._entry(args.name)
        if entry.kind == "server":
            raise ValueError(f"{entry.name} is a server in this kernel, not a cluster: its "
                             f"output is this notebook's")
        job, index = parse_task(args.task)
        if (job, index) not in entry.obj.targets:
            tasks = ", ".join(f"{j}:{i}" for j, i in sorted(entry.obj.targets))
            raise ValueError(f"{entry.name} has no task {job}:{index} (tasks: {tasks})")
        return entry.obj, (job, index)


def _env(assignments: list) -> dict:
    """{NAME: VALUE} from --env NAME=VALUE options."""
    env = {}
    for item in assignments:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise MagicUsageError(f"--env {item!r}: give NAME=VALUE, e.g. PYTHONPATH=/opt/code")
        env[name] = value
    return env


def _local_cluster(request, args, options: dict) -> Cluster:
    if args.user or args.key or args.python is not None or args.ssh_port != 22 or \
            args.ssh_option:
        raise MagicUsageError("--user, --key, --python, --ssh-port and -o need --ssh")
    if request.counts:
        return Cluster.local(jobs=request.counts, server=args.server, **options)
    if args.server != "nbcluster":
        raise MagicUsageError("--server tensorflow takes task counts ('ps: 1'), not addresses")
    return Cluster.from_spec(request.spec, "local", **options)


def _ssh_cluster(request, args, options: dict) -> Cluster:
    ssh = dict(python=args.python or "python3", user=args.user, key=args.key, port=args.ssh_port,
               ssh_options=tuple(word for option in args.ssh_option for word in ("-o", option)))
    hosts = [host.strip() for host in args.ssh.split(",") if host.strip()]
    if request.counts:
        if not hosts:
            raise MagicUsageError("--ssh needs hosts (host1,host2) when the cell gives task "
                                  "counts")
        return Cluster.ssh(hosts, jobs=request.counts, **ssh, **options)
    if hosts:  # each address names its host already: two sources of truth would disagree
        raise MagicUsageError("the cell gives addresses, so give --ssh without hosts (each "
                              "task is started on its address's host)")
    return Cluster.from_spec(request.spec, "ssh", **options, **ssh)


def _slurm_options(args) -> dict:
    """Cluster.slurm's options from the --slurm group of the line."""
    return dict(partition=args.partition, time=args.time, nodes=args.nodes,
                cpus_per_task=args.cpus_per_task, gpus_per_task=args.gpus_per_task,
                sbatch_options=tuple(args.sbatch_option))


def _slurm_cluster(request, args, options: dict) -> Cluster:
    if args.user or args.key or args.ssh_port != 22 or args.ssh_option:
        raise MagicUsageError("--user, --key, --ssh-port and -o need --ssh")
    if not request.counts:
        raise MagicUsageError("with --slurm the cell gives task counts ('worker: 2'): Slurm "
                              "chooses the nodes")
    if request.devices:
        raise MagicUsageError("with --slurm, give devices as --cpus-per-task and "
                              "--gpus-per-task")
    options = {k: v for k, v in options.items() if k != "devices"}
    return Cluster.slurm(jobs=request.counts, python=args.python, wait=not args.no_wait,
                         **_slurm_options(args), **options)
