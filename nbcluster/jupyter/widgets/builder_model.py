"""The cluster builder's design: its data, its validation and the Cluster call it makes.

Rule: pure. A Design is plain data; every function here turns it into
values, or raises ValueError / TypeError naming the offending value.
Nothing starts a process (builder.py does, with `cluster_call`); the text
made from a design (cell, code, fallbacks) is builder_text's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from nbcluster import errors
from nbcluster.framework.cluster_spec import join_address, parse_address
from nbcluster.framework.device_spec import is_valid_job_name
from nbcluster.launch.task_devices import per_task, task_devices

LOCAL = "local"  # the host of a task the local launcher runs on this machine
LAUNCHERS = ("local", "ssh")
_LOCAL_ADDRESS = "127.0.0.1"
_HOST_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


@dataclass
class JobDesign:
    """One job: its name and, per task, a host ("local", "host" or "host:port"),
    a CPU count (None: default) and a GPU list ("": not set, "none", "0,1")."""
    name: str
    hosts: list = field(default_factory=lambda: [LOCAL])
    cpus: list = field(default_factory=lambda: [None])
    gpus: list = field(default_factory=lambda: [""])

    @property
    def tasks(self) -> int:
        return len(self.hosts)

    def resize(self, tasks: int) -> None:
        """Grows (copying the last task's settings) or shrinks to `tasks` tasks (>= 1:
        a job of no task is removed instead)."""
        if isinstance(tasks, bool) or not isinstance(tasks, int) or tasks < 1:
            raise ValueError(f"job {self.name!r}: the task count must be a whole number >= 1 "
                             f"(remove the job to have none), not {tasks!r}")
        for values, default in ((self.hosts, LOCAL), (self.cpus, None), (self.gpus, "")):
            last = values[-1] if values else default
            del values[tasks:]
            values.extend([last] * (tasks - len(values)))


@dataclass
class SSHOptions:
    """What `%%tfserver cluster --ssh` takes: user, key file, sshd port, remote python,
    and `ssh -o` options ("StrictHostKeyChecking=accept-new")."""
    user: str = ""
    key: str = ""
    port: int = 22
    python: str = "python3"
    options: list = field(default_factory=list)


@dataclass
class Design:
    """A whole cluster: its jobs, its launcher ("local" or "ssh"), environment
    variables for every task (`--env`) and the start timeout."""
    jobs: list = field(default_factory=list)
    launcher: str = "local"
    ssh: SSHOptions = field(default_factory=SSHOptions)
    timeout: float = 60.0
    env: dict = field(default_factory=dict)

    def job(self, name: str) -> JobDesign:
        """The job called `name` (ValueError naming the jobs there are if none)."""
        for job in self.jobs:
            if job.name == name:
                return job
        raise ValueError(f"no job {name!r} in the design (jobs: "
                         f"{', '.join(j.name for j in self.jobs) or 'none'})")


def new_job(name: str, tasks: int = 1, hosts=None, cpus=None, gpus="") -> JobDesign:
    """A JobDesign; `hosts`, `cpus` and `gpus` are one value for every task or a list.

    Raises:
      TypeError: a name that is not a string, or a task count that is not an int.
      ValueError: a negative task count or a list of the wrong length.
    """
    if not isinstance(name, str):
        raise TypeError(f"a job name must be a string, not {name!r}")
    if isinstance(tasks, bool) or not isinstance(tasks, int):
        raise TypeError(f"job {name!r}: the task count must be an int, not {tasks!r}")
    if tasks < 1:
        raise ValueError(f"job {name!r}: the task count must be >= 1, not {tasks}")
    return JobDesign(name, per_task(f"job {name!r}: hosts", LOCAL if hosts is None else hosts,
                                     tasks),
                     per_task(f"job {name!r}: cpus", cpus, tasks),
                     per_task(f"job {name!r}: gpus", "" if gpus is None else gpus, tasks))


def job_to_add(design: Design, name: str, tasks: int = 1, hosts=None, cpus=None,
               gpus="") -> JobDesign:
    """A new job for `design` (see `new_job`), valid under its launcher, named apart.

    Raises:
      TypeError, ValueError: naming the bad value, or the name already taken.
    """
    job = new_job(name, tasks, hosts, cpus, gpus)
    if any(other.name == job.name for other in design.jobs):
        raise ValueError(f"job {job.name!r} is already in the design")
    validate(Design([job], design.launcher, design.ssh))
    return job


def parse_cpus(job: str, index: int, text: str) -> Optional[int]:
    """A task's CPU count from its field: None for "" (the default, 1), else the count.

    Raises:
      ValueError: not a whole number >= 1, naming the task and the text.
    """
    text = text.strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"/job:{job}/task:{index}: CPUs must be a whole number >= 1, or "
                         f"empty for the default (1), not {text!r}")
    return int(text)


def next_job_name(design: Design) -> str:
    """The first of "job1", "job2", ... that no job of `design` has."""
    taken = {job.name for job in design.jobs}
    return next(f"job{i}" for i in range(1, len(taken) + 2) if f"job{i}" not in taken)


def default_design() -> Design:
    """One "ps" task and two "worker" tasks, all local."""
    return Design([new_job("ps", 1), new_job("worker", 2)])


def task_address(job: str, index: int, host: str, launcher: str) -> str:
    """The "host:port" a task's host field means (port 0: picked at launch).

    Raises:
      ValueError: a malformed host, or "local" under the SSH launcher.
    """
    where = f"/job:{job}/task:{index}"
    host = host.strip() if isinstance(host, str) else host
    if not isinstance(host, str) or not host:
        raise ValueError(f"{where}: give a host ('local', a host name or host:port), "
                         f"not {host!r}")
    name, _, port = host.rpartition(":") if ":" in host and not host.endswith("]") \
        else (host, "", "0")
    if name == LOCAL:
        if launcher == "ssh":
            raise ValueError(f"{where}: host {host!r} with the SSH launcher: give the host "
                             f"name to ssh to, or pick the local launcher")
        name = _LOCAL_ADDRESS
    if not (_HOST_RE.fullmatch(name) or re.fullmatch(r"\[[0-9A-Fa-f:.]+\]", name)):
        raise ValueError(f"{where}: bad host {host!r}: expected 'local', a host name or IP, "
                         f"or host:port")
    try:
        return join_address(*parse_address(f"{name}:{port}"))
    except errors.InvalidArgumentError as e:
        raise ValueError(f"{where}: bad host {host!r}: {e.message}") from None


def validate(design: Design) -> None:
    """Raises ValueError (or TypeError) naming the first bad value of `design`."""
    if design.launcher not in LAUNCHERS:
        raise ValueError(f"bad launcher {design.launcher!r}: use 'local' or 'ssh'")
    if not design.jobs:
        raise ValueError("the cluster has no job: add one")
    seen = set()
    for job in design.jobs:
        if not is_valid_job_name(job.name):
            raise ValueError(f"bad job name {job.name!r}: it must start with a letter and "
                             f"hold only letters, digits and '_'")
        if job.name in seen:
            raise ValueError(f"job {job.name!r} is given twice")
        seen.add(job.name)
        if job.tasks == 0:
            raise ValueError(f"job {job.name!r} has 0 tasks: give it at least 1")
    addresses: dict = {}
    for job in design.jobs:
        for index, host in enumerate(job.hosts):
            address = task_address(job.name, index, host, design.launcher)
            if not address.endswith(":0") and address in addresses:
                raise ValueError(f"/job:{job.name}/task:{index} and {addresses[address]} are "
                                 f"both at {address}")
            addresses[address] = f"/job:{job.name}/task:{index}"
    task_devices(devices(design), {job.name: range(job.tasks) for job in design.jobs})
    for name, value in design.env.items():
        if not isinstance(name, str) or not name.isidentifier() or not isinstance(value, str):
            raise ValueError(f"bad environment variable {name!r}={value!r}: give NAME=VALUE "
                             f"with a NAME such as PYTHONPATH")
    if design.launcher == "ssh":
        port = design.ssh.port
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"bad ssh port {port!r}: an integer in [1, 65535]")
        if not design.ssh.python.strip():
            raise ValueError("give the remote python (e.g. python3)")
        for option in design.ssh.options:
            if not isinstance(option, str) or not re.fullmatch(r"\w+=\S+", option):
                raise ValueError(f"bad ssh option {option!r}: give NAME=VALUE, e.g. "
                                 f"StrictHostKeyChecking=accept-new")


def uses_addresses(design: Design) -> bool:
    """Whether the cluster needs explicit addresses (ssh, or a host other than "local")."""
    return design.launcher == "ssh" or any(h.strip() != LOCAL
                                           for job in design.jobs for h in job.hosts)


def cluster_spec(design: Design) -> dict:
    """The designed ClusterSpec as a dict: {job: ["host:port", ...]}; port 0 = picked."""
    return {job.name: [task_address(job.name, i, h, design.launcher)
                       for i, h in enumerate(job.hosts)] for job in design.jobs}


def _compact(values: list, unset):
    """One value when every task has it, else the list; `unset` when none has one."""
    if all(v == values[0] for v in values):
        return values[0]
    return list(values) if any(v != unset for v in values) else unset


def devices(design: Design) -> Optional[dict]:
    """The `devices=` argument of Cluster: {job: {"cpus": ..., "gpus": ...}}, or None."""
    out = {}
    for job in design.jobs:
        wanted = {}
        cpus, gpus = _compact(job.cpus, None), _compact(job.gpus, "")
        if cpus is not None:
            wanted["cpus"] = cpus
        if gpus != "":
            wanted["gpus"] = gpus
        if wanted:
            out[job.name] = wanted
    return out or None


def cluster_call(design: Design) -> tuple:
    """(method name of Cluster, positional args, keyword args) that start the design.

    Raises:
      ValueError, TypeError: see `validate`.
    """
    validate(design)
    kwargs: dict = {}
    if design.timeout != 60.0:
        kwargs["timeout"] = design.timeout
    if devices(design):
        kwargs["devices"] = devices(design)
    if design.env:
        kwargs["env"] = dict(design.env)
    if not uses_addresses(design):
        return "local", (), {"jobs": {j.name: j.tasks for j in design.jobs}, **kwargs}
    if design.launcher == "ssh":
        ssh = design.ssh
        kwargs.update({k: v for k, v in (("user", ssh.user), ("key", ssh.key)) if v})
        if ssh.port != 22:
            kwargs["port"] = ssh.port
        if ssh.python != "python3":
            kwargs["python"] = ssh.python
        if ssh.options:
            kwargs["ssh_options"] = tuple(w for o in ssh.options for w in ("-o", o))
    return "from_spec", (cluster_spec(design), design.launcher), kwargs


def parse_env(text: str) -> dict:
    """{NAME: VALUE} from "NAME=VALUE, NAME2=VALUE2" (a comma before NAME= separates).

    Raises:
      ValueError: a piece that is not NAME=VALUE.
    """
    env = {}
    for piece in re.split(r",\s*(?=\w+=)", text.strip()) if text.strip() else []:
        name, sep, value = piece.partition("=")
        if not sep or not name.strip().isidentifier():
            raise ValueError(f"bad environment variable {piece!r}: give NAME=VALUE, e.g. "
                             f"PYTHONPATH=/opt/code")
        env[name.strip()] = value.strip()
    return env
